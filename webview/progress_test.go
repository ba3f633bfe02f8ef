package webview_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/webview"
)

func progressEv(id string, step int, agent string, p registry.Progress) engine.Event {
	return engine.Event{Type: engine.EventAgentProgress, InstanceID: id, Step: step, Agent: agent, Progress: &p}
}

func TestProgressLog_KeepsTheLatestMessageAndAppendsDeltas(t *testing.T) {
	l := webview.NewProgressLog()
	l.Observe(progressEv("a", 2, "writer", registry.Progress{Message: "searching", Delta: "Dear "}))
	l.Observe(progressEv("a", 2, "writer", registry.Progress{Delta: "customer,"}))
	l.Observe(progressEv("a", 1, "checker", registry.Progress{Message: "reading"}))
	l.Observe(progressEv("a", 2, "writer", registry.Progress{Message: "writing", Data: map[string]any{"n": 1}}))
	l.Observe(progressEv("b", 1, "writer", registry.Progress{Delta: "other"}))
	l.Observe(engine.Event{Type: engine.EventAgentProgress, InstanceID: "a", Step: 3, Agent: "x"}) // no progress: nothing

	got := l.Of("a")
	require.Len(t, got, 2)
	assert.Equal(t, 1, got[0].Step, "by step")
	assert.Equal(t, "reading", got[0].Message)
	assert.Equal(t, "writer", got[1].Agent)
	assert.Equal(t, "writing", got[1].Message, "the latest message")
	assert.Equal(t, "Dear customer,", got[1].Text, "the deltas in order")
	assert.False(t, got[1].Clipped)

	// A run that reports is over; a state change ends every run of the
	// state; an instance that ends is forgotten.
	l.Observe(engine.Event{Type: engine.EventAgentReported, InstanceID: "a", Step: 1, Agent: "checker"})
	require.Len(t, l.Of("a"), 1)
	l.Observe(engine.Event{Type: engine.EventStateChanged, InstanceID: "a", Step: 4})
	assert.Empty(t, l.Of("a"))
	l.Observe(engine.Event{Type: engine.EventCancelled, InstanceID: "b"})
	assert.Empty(t, l.Of("b"))
	assert.Empty(t, l.Of("never"))
}

// A long streamed answer keeps its end, cut at a character's start; past
// its bound the log forgets the run heard of least recently.
func TestProgressLog_IsBounded(t *testing.T) {
	l := webview.NewProgressLog()
	l.Observe(progressEv("long", 1, "writer", registry.Progress{Delta: "é" + strings.Repeat("x", 20<<10)}))
	l.Observe(progressEv("long", 1, "writer", registry.Progress{Delta: strings.Repeat("é", 10<<10) + "THE END"}))
	got := l.Of("long")
	require.Len(t, got, 1)
	assert.True(t, got[0].Clipped)
	assert.LessOrEqual(t, len(got[0].Text), 16<<10)
	assert.True(t, strings.HasSuffix(got[0].Text, "THE END"))
	assert.True(t, strings.HasPrefix(got[0].Text, "é"), "cut inside a character")

	for k := range 300 {
		l.Observe(progressEv("many", k+1, "writer", registry.Progress{Message: "m"}))
	}
	n := len(l.Of("many")) + len(l.Of("long"))
	assert.Equal(t, 256, n, "runs kept")
	assert.Empty(t, l.Of("long"), "the quietest run is dropped first")
}
