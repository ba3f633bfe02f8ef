package boltstore

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
)

// TestTooLarge_IsCorruption classifies the errors of a damaged file whose
// pages claim a size the system cannot map or grow the file to (found by
// fuzzing Open) as corruption, not as a failure to open the file.
func TestTooLarge_IsCorruption(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&fs.PathError{Op: "truncate", Path: "x.db", Err: syscall.EFBIG}, true},
		{fmt.Errorf("mmap allocate error: %w", errors.New("mmap too large")), true},
		{&fs.PathError{Op: "open", Path: "x.db", Err: syscall.ENOENT}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := tooLarge(tt.err); got != tt.want {
			t.Errorf("tooLarge(%v): got %v, want %v", tt.err, got, tt.want)
		}
	}
}
