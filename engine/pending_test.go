package engine_test

import (
	"context"
	"testing"

	"github.com/batonhq/baton/engine"
)

func TestEngine_Pending_ChildRunsThroughTheParentsEngine(t *testing.T) {
	r := newChildRun(t, map[string][]reply{"signup": {ok("signed", map[string]any{"customer": "c-7"})}})
	h, err := r.eng.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r.runUntil(r.queued("checker")) // the child's external run, on the bus
	work, held := r.eng.Pending(h.ID(), nil)
	if !held || len(work) != 1 || work[0].Kind != engine.PendingChild {
		t.Fatalf("parent: got %+v (held %v), want one child", work, held)
	}
	child := work[0].Child
	work, held = r.eng.Pending(child, work[:0])
	if !held || len(work) != 1 || work[0].Kind != engine.PendingRun || work[0].Agent != "checker" || work[0].Go {
		t.Fatalf("child: got %+v (held %v), want the external checker's run", work, held)
	}
	if _, held := r.eng.Pending("nope", nil); held {
		t.Fatal("an unknown instance is held")
	}
	buf := make([]engine.Pending, 0, 4)
	if n := testing.AllocsPerRun(100, func() { buf, _ = r.eng.Pending(child, buf[:0]) }); n != 0 {
		t.Fatalf("got %v allocations per read, want 0", n)
	}
}
