package registry_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/batonhq/baton/registry"
)

func TestReject(t *testing.T) {
	err := registry.Reject("queue busy")
	var re *registry.RejectError
	if !errors.As(err, &re) || re.Reason != "queue busy" || !errors.Is(err, registry.ErrRejected) {
		t.Fatalf("Reject = %v, want *RejectError{queue busy} matching ErrRejected", err)
	}
	if got, want := err.Error(), "registry: hand-off rejected: queue busy"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := registry.Reject("").Error(), "registry: hand-off rejected"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestIsRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain error", errors.New("seller API unavailable"), true},
		{"permanent", registry.Permanent(io.ErrUnexpectedEOF), false},
		{"wrapped permanent", fmt.Errorf("run: %w", registry.Permanent(io.EOF)), false},
		{"rejection", registry.Reject("busy"), false},
		{"wrapped rejection", fmt.Errorf("run: %w", registry.Reject("busy")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := registry.IsRetryable(tt.err); got != tt.want {
				t.Errorf("IsRetryable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestPermanent(t *testing.T) {
	if registry.Permanent(nil) != nil {
		t.Errorf("Permanent(nil) != nil")
	}
	err := registry.Permanent(io.EOF)
	if !errors.Is(err, io.EOF) || err.Error() != io.EOF.Error() {
		t.Errorf("Permanent(io.EOF) = %q, want it to wrap io.EOF with the same text", err)
	}
}
