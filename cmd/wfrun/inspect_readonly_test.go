package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestInspect_MissingStoreIsAnError inspects a mistyped path: exit 1, and
// no store created where there was none.
func TestInspect_MissingStoreIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typo.db")
	_, errOut, code := wfrun(t, "inspect", "--store", path)
	if code != 1 {
		t.Errorf("got exit %d (%s), want 1", code, errOut)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v for the path after inspect, want it still missing", err)
	}
}
