package engine_test

import (
	"errors"
	"testing"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/transport"
)

// TestEngine_New_AnExternalAgentNeedsATransport: a workflow with an agent
// that has no Go handler is refused without a transport, naming the
// agent; WithOwnTransport builds one on the engine's clock and ids only
// then, and the engine closes it as it closes.
func TestEngine_New_AnExternalAgentNeedsATransport(t *testing.T) {
	w := loadWorkflow(t, "chain.yaml")
	reg, err := engine.NewRegistry(w, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = engine.New(w, reg)
	var nt *engine.NoTransportError
	if !errors.Is(err, engine.ErrNoTransport) || !errors.As(err, &nt) || nt.Workflow != w.Name || nt.Agent == "" {
		t.Fatalf("got %v, want a *NoTransportError naming the workflow and an agent", err)
	}

	sim := clock.NewSim(epoch)
	var built *bus.Bus
	eng, err := engine.New(w, reg, engine.WithClock(sim), engine.WithExecutor(sim),
		engine.WithOwnTransport(func(clk clock.Clock, ids func() string) transport.Transport {
			if clk != sim || ids == nil {
				t.Errorf("got clock %v and ids %v, want the engine's", clk, ids != nil)
			}
			built = bus.New(bus.WithClock(clk))
			return built
		}))
	if err != nil {
		t.Fatal(err)
	}
	if built == nil || eng.Transport() != built {
		t.Fatal("the engine does not run on the transport it built")
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	if err := built.OpenMailbox("late", 0); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("got %v from the engine's own bus after Close, want one matching transport.ErrClosed", err)
	}
}
