package fsm_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/fsm"
	"github.com/batonhq/baton/rules"
)

func load(t testing.TB, path string) *rules.Workflow {
	t.Helper()
	w, err := rules.Load(path)
	require.NoError(t, err)
	return w
}

func compile(t testing.TB, path string) *fsm.Definition {
	t.Helper()
	d, err := fsm.Compile(load(t, path))
	require.NoError(t, err)
	return d
}

func TestMachine_Fire_FollowsRules(t *testing.T) {
	d := compile(t, "testdata/loop.yaml")
	tests := []struct {
		name   string
		events []string
		want   string
	}{
		{"initial state", nil, "DRAFT"},
		{"one step", []string{"submit"}, "REVIEW"},
		{"back to draft", []string{"submit", "revise"}, "DRAFT"},
		{"to terminal", []string{"submit", "revise", "submit", "accept"}, "DONE"},
		{"limit edge", []string{"submit", fsm.LimitEvent}, "ESCALATE"},
		{"limit edge from initial", []string{fsm.LimitEvent, "decide"}, "DONE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := d.New()
			for _, ev := range tt.events {
				_, err := m.Fire(context.Background(), ev)
				require.NoError(t, err, "event %s", ev)
			}
			assert.Equal(t, tt.want, m.Current())
		})
	}
}

func TestMachine_Fire_RefusesUndeclaredTransitions(t *testing.T) {
	d := compile(t, "testdata/loop.yaml")
	tests := []struct {
		name    string
		events  []string
		bad     string
		wantErr error
	}{
		{"rule of another state", nil, "accept", fsm.ErrInvalidTransition},
		{"unknown event", nil, "nope", fsm.ErrUnknownEvent},
		{"nothing leaves a terminal state", []string{"submit", "accept"}, "revise", fsm.ErrInvalidTransition},
		{"no limit edge out of the on_limit state", []string{fsm.LimitEvent}, fsm.LimitEvent, fsm.ErrInvalidTransition},
		{"no limit edge out of a terminal state", []string{"submit", "accept"}, fsm.LimitEvent, fsm.ErrInvalidTransition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := d.New()
			for _, ev := range tt.events {
				_, err := m.Fire(context.Background(), ev)
				require.NoError(t, err)
			}
			before := m.Current()
			got, err := m.Fire(context.Background(), tt.bad)
			require.ErrorIs(t, err, tt.wantErr)
			var te *fsm.TransitionError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, tt.bad, te.Event)
			assert.Equal(t, before, te.State)
			assert.Equal(t, before, got, "a refused transition must not move the machine")
			assert.Equal(t, before, m.Current())
		})
	}
}

func TestMachine_Fire_SameStateIsSuccess(t *testing.T) {
	d := compile(t, "testdata/loop.yaml")
	m := d.New()
	_, err := m.Fire(context.Background(), "submit")
	require.NoError(t, err)
	got, err := m.Fire(context.Background(), "again")
	require.NoError(t, err, "looplab's NoTransitionError must be a success")
	assert.Equal(t, "REVIEW", got)
}

func TestMachine_Fire_CanceledContext(t *testing.T) {
	d := compile(t, "testdata/loop.yaml")
	m := d.New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := m.Fire(ctx, "submit")
	require.ErrorIs(t, err, fsm.ErrTransitionFailed)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "DRAFT", got, "a cancelled transition does not move the machine")
	assert.Equal(t, "DRAFT", m.Current())
}

func TestMachine_CanAndAvailable(t *testing.T) {
	d := compile(t, "testdata/loop.yaml")
	m := d.New()
	assert.True(t, m.Can("submit"))
	assert.False(t, m.Can("accept"))
	assert.Equal(t, []string{fsm.LimitEvent, "submit"}, m.Available())
	_, err := m.Fire(context.Background(), "submit")
	require.NoError(t, err)
	assert.Equal(t, []string{fsm.LimitEvent, "accept", "again", "revise"}, m.Available())
}

func TestDefinition_Restore(t *testing.T) {
	d := compile(t, "testdata/loop.yaml")
	m, err := d.Restore("REVIEW")
	require.NoError(t, err)
	got, err := m.Fire(context.Background(), "accept")
	require.NoError(t, err)
	assert.Equal(t, "DONE", got)

	_, err = d.Restore("NOWHERE")
	assert.ErrorIs(t, err, fsm.ErrUnknownState)
}

func TestDefinition_Transitions(t *testing.T) {
	d := compile(t, "testdata/loop.yaml")
	got := d.Transitions()
	assert.Contains(t, got, fsm.Transition{Event: "submit", From: "DRAFT", To: "REVIEW"})
	assert.Contains(t, got, fsm.Transition{Event: fsm.LimitEvent, From: "REVIEW", To: "ESCALATE"})
	assert.NotContains(t, got, fsm.Transition{Event: fsm.LimitEvent, From: "ESCALATE", To: "ESCALATE"})
	assert.Len(t, got, 5+2) // five rules, limit edge from DRAFT and REVIEW
}

func TestMachine_ConcurrentUse(t *testing.T) {
	d := compile(t, "testdata/loop.yaml")
	shared := d.New()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := d.New()
			for range 200 {
				for _, ev := range []string{"submit", "revise"} {
					if _, err := own.Fire(context.Background(), ev); err != nil {
						t.Errorf("goroutine %d: %v", i, err)
						return
					}
				}
				// On the shared machine only one of the racing goroutines may win each step.
				_, _ = shared.Fire(context.Background(), "submit")
				_, _ = shared.Fire(context.Background(), "revise")
				_ = shared.Available()
			}
		}()
	}
	wg.Wait()
	assert.Contains(t, []string{"DRAFT", "REVIEW"}, shared.Current())
}

func TestCompile_NilWorkflow(t *testing.T) {
	_, err := fsm.Compile(nil)
	assert.Error(t, err)
}

func BenchmarkFSMNewAndFire(b *testing.B) {
	d := compile(b, "../examples/refund/workflow.yaml")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m := d.New()
		if _, err := m.Fire(ctx, "eligible"); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleMachine_Fire() {
	w, err := rules.Load("testdata/loop.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := fsm.Compile(w)
	m := d.New()
	for _, ev := range []string{"submit", "accept", "revise"} {
		state, err := m.Fire(context.Background(), ev)
		if errors.Is(err, fsm.ErrInvalidTransition) {
			fmt.Println("refused:", err)
			continue
		}
		fmt.Println(ev, "->", state)
	}
	// Output:
	// submit -> REVIEW
	// accept -> DONE
	// refused: fsm: invalid transition: event "revise" is not allowed in state DONE
}
