package ops_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/ops"
)

func all(ops.Event) bool { return true }

func TestHub_Subscribe_ReplaysAfterAnID(t *testing.T) {
	h := ops.NewHub(8)
	defer h.Close()
	for _, id := range []string{"a", "b", "a"} {
		h.Publish(ops.Event{Type: "state_changed", Instance: id})
	}
	backlog, sub, ok := h.Subscribe(1, true, func(ev ops.Event) bool { return ev.Instance == "a" })
	require.True(t, ok)
	defer sub.Close()
	require.Len(t, backlog, 1)
	assert.Equal(t, uint64(3), backlog[0].ID, "events are numbered in order, from 1")

	h.Publish(ops.Event{Type: "completed", Instance: "b"})
	h.Publish(ops.Event{Type: "completed", Instance: "a"})
	ev := <-sub.C()
	assert.Equal(t, uint64(5), ev.ID, "the filter keeps b's events out")
	assert.True(t, ev.Finished())
}

func TestHub_Subscribe_AGapWhenEventsAreNoLongerKept(t *testing.T) {
	h := ops.NewHub(2)
	defer h.Close()
	for range 5 {
		h.Publish(ops.Event{Type: "state_changed", Instance: "a"})
	}
	backlog, sub, ok := h.Subscribe(1, true, all)
	require.True(t, ok)
	defer sub.Close()
	require.Len(t, backlog, 3)
	assert.Equal(t, "gap", backlog[0].Type)
	assert.Equal(t, uint64(4), backlog[0].First, "the oldest event kept")
	assert.Equal(t, []uint64{4, 5}, []uint64{backlog[1].ID, backlog[2].ID})
}

func TestHub_Publish_DropsASubscriberThatFellBehind(t *testing.T) {
	h := ops.NewHub(4)
	defer h.Close()
	_, sub, ok := h.Subscribe(0, false, all)
	require.True(t, ok)
	defer sub.Close()
	for range ops.SubscriberSlots + 1 {
		h.Publish(ops.Event{Type: "state_changed", Instance: "a"})
	}
	n := 0
	for range sub.C() {
		n++
	}
	assert.Equal(t, ops.SubscriberSlots, n, "the channel holds a buffer, then is closed")
	dropped, first := sub.Dropped()
	assert.True(t, dropped)
	assert.Equal(t, uint64(ops.SubscriberSlots+1-3), first)
}

func TestHub_Close_EndsSubscriptionsAndWatches(t *testing.T) {
	h := ops.NewHub(4)
	_, sub, ok := h.Subscribe(0, false, all)
	require.True(t, ok)
	var seen []string
	stop, done, ok := h.Watch(all, func(ev ops.Event) { seen = append(seen, ev.Type) })
	require.True(t, ok)
	defer stop()
	h.Publish(ops.Event{Type: "started"})
	h.Close()
	h.Close() // twice is safe
	<-done
	n := 0
	for range sub.C() {
		n++
	}
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"started"}, seen)
	dropped, _ := sub.Dropped()
	assert.False(t, dropped, "a closed hub drops no one")
	_, _, ok = h.Subscribe(0, false, all)
	assert.False(t, ok)
	sub.Close() // after the hub's close: safe
}

func TestOps_Subscribe_FollowsTheEngines(t *testing.T) {
	h := ops.NewHub(64)
	defer h.Close()
	f := newFixture(t, ops.WithEvents(h))
	_, sub, err := f.ops.Subscribe(0, false, func(ev ops.Event) bool { return ev.Instance == "w" })
	require.NoError(t, err)
	defer sub.Close()
	// The engine's observer is the process's: here the test publishes what
	// the engine tells it.
	f.onEvent(func(ev engine.Event) { h.Publish(ops.EventOf(ev)) })
	_, _, err = f.ops.Start(context.Background(), ops.StartRequest{Workflow: "desk", ID: "w"})
	require.NoError(t, err)
	for ev := range sub.C() {
		if ev.Type == "state_changed" && ev.State == "APPROVAL" {
			break
		}
	}

	_, _, err = newFixture(t).ops.Subscribe(0, false, all)
	require.ErrorIs(t, err, ops.ErrUnavailable, "no hub, no events")
	h.Close()
	_, _, err = f.ops.Subscribe(0, false, all)
	require.ErrorIs(t, err, ops.ErrUnavailable, "a closed hub")
}
