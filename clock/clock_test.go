package clock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/clock"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func TestSim_RunsWorkBeforeTimersAndTimersInDeadlineOrder(t *testing.T) {
	s := clock.NewSim(t0)
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+s.Now().Sub(t0).String()) }
	}
	s.AfterFunc(2*time.Second, at("b"))
	s.AfterFunc(time.Second, at("a"))
	s.AfterFunc(2*time.Second, at("c")) // same deadline as b: scheduling order
	s.Submit(at("w1"))
	s.Submit(func() {
		at("w2")()
		s.Submit(at("w3")) // work queued by work runs before any timer
	})
	require.NoError(t, s.Run(context.Background(), nil))
	assert.Equal(t, []string{"w1@0s", "w2@0s", "w3@0s", "a@1s", "b@2s", "c@2s"}, got)
	assert.True(t, s.Idle())
}

func TestSim_StopAndAdvance(t *testing.T) {
	s := clock.NewSim(t0)
	fired := false
	tm := s.AfterFunc(time.Minute, func() { fired = true })
	assert.True(t, tm.Stop())
	assert.False(t, tm.Stop(), "second Stop reports the timer was not pending")
	s.Advance(30 * time.Second)
	assert.Equal(t, t0.Add(30*time.Second), s.Now())
	late := s.AfterFunc(time.Second, func() {})
	require.NoError(t, s.Run(context.Background(), nil))
	assert.False(t, fired)
	assert.Equal(t, t0.Add(31*time.Second), s.Now())
	assert.False(t, late.Stop(), "a fired timer cannot be stopped")
}

func TestSim_AdvancePastDeadlineKeepsTime(t *testing.T) {
	s := clock.NewSim(t0)
	var firedAt time.Time
	s.AfterFunc(time.Second, func() { firedAt = s.Now() })
	s.Submit(func() { s.Advance(5 * time.Second) }) // work that takes longer than the timer
	require.NoError(t, s.Run(context.Background(), nil))
	assert.Equal(t, t0.Add(5*time.Second), firedAt, "the clock never goes backwards")
}

func TestSim_RunStopsWhenDoneOrCancelled(t *testing.T) {
	s := clock.NewSim(t0)
	n := 0
	var tick func()
	tick = func() { n++; s.AfterFunc(time.Second, tick) }
	s.Submit(tick)
	require.NoError(t, s.Run(context.Background(), func() bool { return n == 5 }))
	assert.Equal(t, 5, n)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Run(ctx, nil)
	assert.True(t, errors.Is(err, clock.ErrSimStopped) && errors.Is(err, context.Canceled), "got %v", err)
}

func TestManual_AdvanceRunsDueCallbacksInOrder(t *testing.T) {
	m := clock.NewManual(t0)
	var got []time.Duration
	rec := func() { got = append(got, m.Now().Sub(t0)) }
	m.AfterFunc(3*time.Second, rec)
	m.AfterFunc(time.Second, rec)
	stopped := m.AfterFunc(2*time.Second, rec)
	assert.True(t, stopped.Stop())
	next, ok := m.NextDeadline()
	require.True(t, ok)
	assert.Equal(t, t0.Add(time.Second), next)
	m.Advance(2 * time.Second)
	assert.Equal(t, []time.Duration{time.Second}, got)
	m.Advance(5 * time.Second)
	assert.Equal(t, []time.Duration{time.Second, 3 * time.Second}, got)
	assert.Equal(t, t0.Add(7*time.Second), m.Now())
	_, ok = m.NextDeadline()
	assert.False(t, ok)
}

func TestReal(t *testing.T) {
	c := clock.Real()
	assert.WithinDuration(t, time.Now(), c.Now(), time.Minute)
	done := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(done) })
	<-done
}

// The clocks' timers are Resetters, as the engine expects.
var (
	_ clock.Resetter = (*time.Timer)(nil)
)

func TestSim_Reset(t *testing.T) {
	s := clock.NewSim(t0)
	var got []string
	tm := s.AfterFunc(time.Minute, func() { got = append(got, "t@"+s.Now().Sub(t0).String()) })
	s.AfterFunc(2*time.Second, func() { got = append(got, "other@"+s.Now().Sub(t0).String()) })
	assert.True(t, tm.(clock.Resetter).Reset(2*time.Second), "a pending timer reports it was pending")
	require.NoError(t, s.Run(context.Background(), nil))
	// Reset orders the timer as a new one: after the other timer of the same deadline.
	assert.Equal(t, []string{"other@2s", "t@2s"}, got)
	assert.False(t, tm.(clock.Resetter).Reset(time.Second), "a fired timer was not pending")
	require.NoError(t, s.Run(context.Background(), nil))
	assert.Equal(t, []string{"other@2s", "t@2s", "t@3s"}, got, "a fired timer runs again once reset")
}

func TestManual_Reset(t *testing.T) {
	m := clock.NewManual(t0)
	n := 0
	tm := m.AfterFunc(time.Second, func() { n++ })
	assert.True(t, tm.(clock.Resetter).Reset(3*time.Second))
	m.Advance(2 * time.Second)
	assert.Equal(t, 0, n, "reset moved the deadline")
	m.Advance(time.Second)
	assert.Equal(t, 1, n)
	assert.False(t, tm.(clock.Resetter).Reset(time.Second), "a fired timer was not pending")
	m.Advance(time.Second)
	assert.Equal(t, 2, n)
	assert.False(t, tm.(clock.Resetter).Reset(time.Second), "fired again")
	assert.True(t, tm.Stop(), "pending since the reset")
	m.Advance(time.Hour)
	assert.Equal(t, 2, n, "stopped after a reset")
}
