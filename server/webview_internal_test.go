package server

import (
	"testing"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/webview"
)

// Every page's watcher and the view's own hand the same event to the
// progress log: it takes each once, so that a delta is never appended
// twice however many pages are open.
func TestViewProgress_TakesEachEventOnce(t *testing.T) {
	p := &viewProgress{log: webview.NewProgressLog()}
	delta := func(id uint64, text string) Event {
		return Event{ID: id, Type: "agent_progress", Instance: "i", Step: 1, Agent: "writer", Progress: &registry.Progress{Delta: text}}
	}
	for _, ev := range []Event{delta(1, "Dear "), delta(1, "Dear "), {ID: 2, Type: "signal_received", Instance: "i"}, delta(3, "customer,"), delta(3, "customer,"), delta(3, "customer,")} {
		p.observe(ev)
	}
	got := p.log.Of("i")
	if len(got) != 1 || got[0].Text != "Dear customer," {
		t.Errorf("got %+v, want one run whose text is %q", got, "Dear customer,")
	}
}
