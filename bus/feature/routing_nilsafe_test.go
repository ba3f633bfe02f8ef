package feature_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/batonhq/baton/transport"
)

// TestEntryPoints_NilContextAndMessage_Routing calls every routing entry
// point taking a ctx or a message with nil: each returns a validation
// error, none panics.
func TestEntryPoints_NilContextAndMessage_Routing(t *testing.T) {
	r := newRouting(t, newBus(t), routingConfig{}, "A", "B")
	ctx := context.Background()
	var nilCtx context.Context
	valid := func() *transport.Message { return routingRequest("A", "B", "work") }
	calls := map[string]func() error{
		"SendWork nil ctx":     func() error { return r.top().SendWork(nilCtx, valid()) },
		"SendWork nil message": func() error { return r.top().SendWork(ctx, nil) },
		"Request nil ctx":      func() error { _, err := r.req.Request(nilCtx, valid()); return err },
		"Request nil message":  func() error { _, err := r.req.Request(ctx, nil); return err },
		"Reply nil ctx": func() error {
			return r.req.Reply(nilCtx, valid(), &transport.Message{Content: map[string]any{"action": "x"}})
		},
		"Reply nil messages":           func() error { return r.req.Reply(ctx, nil, nil) },
		"Broadcast nil ctx":            func() error { _, err := r.bc.Broadcast(nilCtx, valid()); return err },
		"Broadcast nil message":        func() error { _, err := r.bc.Broadcast(ctx, nil); return err },
		"BroadcastToTypes nil ctx":     func() error { _, err := r.bc.BroadcastToTypes(nilCtx, []string{"t"}, valid()); return err },
		"BroadcastToTypes nil message": func() error { _, err := r.bc.BroadcastToTypes(ctx, []string{"t"}, nil); return err },
		"Publish nil ctx":              func() error { _, err := r.topics.Publish(nilCtx, "news", valid()); return err },
		"Publish nil message":          func() error { _, err := r.topics.Publish(ctx, "news", nil); return err },
		"Conversations nil ctx":        func() error { return r.conv.SendWork(nilCtx, valid()) },
		"Conversations nil message":    func() error { return r.conv.SendWork(ctx, nil) },
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
