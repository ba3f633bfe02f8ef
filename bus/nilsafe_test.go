package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/batonhq/baton/transport"
)

// panicky is a payload value whose MarshalJSON panics.
type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("boom") }

// TestEntryPoints_NilContextAndMessage calls every bus entry point taking a
// ctx or a message with nil: each returns a validation error, none panics.
func TestEntryPoints_NilContextAndMessage(t *testing.T) {
	b := newBus(t, []string{"A", "B"})
	ctx := context.Background()
	var nilCtx context.Context
	valid := func() *transport.Message { return request("A", "B", "work") }
	calls := map[string]func() error{
		"Send nil ctx":        func() error { return b.Send(nilCtx, valid()) },
		"Send nil message":    func() error { return b.Send(ctx, nil) },
		"SendAll nil ctx":     func() error { return errors.Join(b.SendAll(nilCtx, []*transport.Message{valid()})...) },
		"SendAll nil message": func() error { return errors.Join(b.SendAll(ctx, []*transport.Message{nil})...) },
		"Ack nil ctx":         func() error { return b.Ack(nilCtx, valid()) },
		"Ack nil message":     func() error { return b.Ack(ctx, nil) },
		"Nack nil ctx":        func() error { return b.Nack(nilCtx, valid()) },
		"Nack nil message":    func() error { return b.Nack(ctx, nil) },
		"Reject nil ctx":      func() error { return b.Reject(nilCtx, valid(), "no") },
		"Reject nil message":  func() error { return b.Reject(ctx, nil, "no") },
		"ReceiveWait nil ctx": func() error { _, err := b.ReceiveWait(nilCtx, "A"); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic: %v", r)
					}
				}()
				err = call()
			}()
			if !errors.Is(err, transport.ErrValidation) {
				t.Errorf("got %v, want an error matching ErrValidation", err)
			}
		})
	}
}

// TestSend_RefusesUnencodablePayloadNamingTheField sends messages whose
// payload panics when encoded or holds invalid UTF-8: each is refused with
// a *ValidationError naming the field, and nothing is accepted.
func TestSend_RefusesUnencodablePayloadNamingTheField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(m *transport.Message)
		field  string
		reason string
	}{
		{"panicking MarshalJSON", func(m *transport.Message) { m.Content["x"] = panicky{} }, "content.x", "MarshalJSON panicked"},
		{"panicking MarshalJSON nested", func(m *transport.Message) { m.Content["a"] = []any{1, map[string]any{"b": panicky{}}} }, "content.a[1].b", "MarshalJSON panicked"},
		{"invalid UTF-8 in content", func(m *transport.Message) { m.Content["note"] = "caf\xe9" }, "content.note", "is not valid UTF-8"},
		{"invalid UTF-8 in a content key", func(m *transport.Message) { m.Content["k\xff"] = 1 }, "content", "key that is not valid UTF-8"},
		{"invalid UTF-8 in metadata", func(m *transport.Message) { m.Metadata = map[string]any{"tags": []string{"ok", "\xff"}} }, "metadata.tags[1]", "is not valid UTF-8"},
		{"invalid UTF-8 in from_agent", func(m *transport.Message) { m.From = "A\xff" }, "from_agent", "is not valid UTF-8"},
		{"invalid UTF-8 in idempotency_key", func(m *transport.Message) { m.IdempotencyKey = "\xc3" }, "idempotency_key", "is not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBus(t, []string{"A", "B"})
			m := request("A", "B", "work")
			tt.mutate(m)
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic: %v", r)
					}
				}()
				err = b.Send(t.Context(), m)
			}()
			var ve *transport.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, want a *ValidationError", err)
			}
			if ve.Field != tt.field || !strings.Contains(ve.Reason, tt.reason) {
				t.Errorf("got field %q reason %q, want %q and a reason containing %q", ve.Field, ve.Reason, tt.field, tt.reason)
			}
			if s := b.Metrics(); s.Accepted != 0 {
				t.Errorf("got %d accepted, want 0", s.Accepted)
			}
		})
	}
}
