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

func TestKind(t *testing.T) {
	if registry.Kind(nil, "rate_limited") != nil {
		t.Errorf("Kind(nil, rate_limited) != nil")
	}
	err := registry.Kind(io.EOF, "rate_limited")
	if !errors.Is(err, io.EOF) || err.Error() != io.EOF.Error() {
		t.Errorf("Kind(io.EOF) = %q, want it to wrap io.EOF with the same text", err)
	}
	var ke *registry.KindError
	if !errors.As(fmt.Errorf("run: %w", registry.Permanent(err)), &ke) {
		t.Fatalf("errors.As(*KindError) = false through Permanent and %%w, want true")
	}
	if got, want := ke.Kind, "rate_limited"; got != want {
		t.Errorf("got kind %q, want %q", got, want)
	}
	if !errors.Is(ke.Err, io.EOF) {
		t.Errorf("got KindError.Err %v, want io.EOF", ke.Err)
	}
}

func TestKindOf(t *testing.T) {
	plain := errors.New("seller API unavailable")
	tests := []struct {
		name      string
		err       error
		want      string
		retryable bool
	}{
		{"nil", nil, "", false},
		{"no kind", plain, "error", true},
		{"wrapped without kind", fmt.Errorf("run: %w", plain), "error", true},
		{"permanent without kind", registry.Permanent(plain), "error", false},
		{"kind", registry.Kind(plain, "rate_limited"), "rate_limited", true},
		{"wrapped kind", fmt.Errorf("run: %w", registry.Kind(plain, "rate_limited")), "rate_limited", true},
		{"empty kind", registry.Kind(plain, ""), "error", true},
		{"kind then permanent", registry.Permanent(registry.Kind(plain, "quota")), "quota", false},
		{"permanent then kind", registry.Kind(registry.Permanent(plain), "quota"), "quota", false},
		{"rejection", registry.Reject("busy"), "rejected", false},
		{"wrapped rejection", fmt.Errorf("run: %w", registry.Reject("busy")), "rejected", false},
		{"rejection with a kind", registry.Kind(registry.Reject("busy"), "policy"), "policy", false},
		{"outer kind wins", registry.Kind(registry.Kind(plain, "inner"), "outer"), "outer", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := registry.KindOf(tt.err); got != tt.want {
				t.Errorf("KindOf(%v) = %q, want %q", tt.err, got, tt.want)
			}
			if got := registry.IsRetryable(tt.err); got != tt.retryable {
				t.Errorf("IsRetryable(%v) = %v, want %v", tt.err, got, tt.retryable)
			}
		})
	}
}
