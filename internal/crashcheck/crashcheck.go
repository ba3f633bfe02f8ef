// Package crashcheck checks what a crash test leaves in a store: the
// engine's crash test (on bbolt) and the NATS store's crash test run the
// workflow of their testdata/crash.yaml in child processes killed at random
// moments, and both end with the same verdict on the store and on the log
// of idempotency keys the agents saw.
package crashcheck

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
)

// Figures are what a crash test reports.
type Figures struct {
	Runs    int // agent runs logged, repeated runs included
	Keys    int // distinct idempotency keys the agents saw
	Resumed int // runs the engines resumed after a kill
}

// Verify checks that st holds n instances, each completed DONE with the rules
// ab, bp, pc and done fired once in that order and its context complete,
// its outbox settled, every step applied exactly once, and every applied
// step's key seen by its agent (logFile has one key a line).
func Verify(t testing.TB, st record.Store, logFile string, n int) Figures {
	t.Helper()
	ctx := context.Background()
	snaps, err := st.Instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != n {
		t.Fatalf("got %d instances in the store, want %d", len(snaps), n)
	}
	ran := map[string]bool{} // the idempotency keys agents saw
	var fig Figures
	f, err := os.Open(logFile)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	seen := map[string]int{} // how many times agents saw each key
	for sc.Scan() {
		key := strings.TrimSpace(sc.Text())
		ran[key] = true
		seen[key]++
		fig.Runs++
	}
	f.Close()
	fig.Keys = len(ran)
	for _, s := range snaps {
		if s.Status != record.StatusCompleted || s.Outcome != "DONE" {
			t.Errorf("instance %s: got %s %s (%s), want completed DONE", s.ID, s.Status, s.Outcome, s.Error)
			explain(t, st, s.ID, seen)
			continue
		}
		history, err := st.History(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if left, err := st.Outbox(ctx, s.ID); err != nil || len(left) != 0 {
			t.Errorf("instance %s: outbox holds %v (%v), want every item settled (the final notice taken)", s.ID, left, err)
		}
		steps := map[int]int{}
		var fired []string
		for _, e := range history {
			switch e.Kind {
			case record.KindAgentRun:
				if e.Error == "" {
					steps[e.Step]++
					if !ran[fmt.Sprintf("%s:%d", s.ID, e.Step)] {
						t.Errorf("instance %s step %d was applied without its agent seeing key %s:%d", s.ID, e.Step, s.ID, e.Step)
					}
				}
			case record.KindRuleFired:
				fired = append(fired, e.Rule)
			case engine.KindResumed:
				fig.Resumed++
			}
		}
		for step, count := range steps {
			if count != 1 {
				t.Errorf("instance %s: step %d applied %d times, want once", s.ID, step, count)
			}
		}
		if got := strings.Join(fired, ","); got != "ab,bp,pc,done" {
			t.Errorf("instance %s: rules fired %s, want ab,bp,pc,done exactly once each", s.ID, got)
		}
		if want := map[string]any{"a": 1.0, "b": 2.0, "p": 3.0, "c": 3.0}; fmt.Sprint(s.Context) != fmt.Sprint(want) {
			t.Errorf("instance %s: context %v, want %v", s.ID, s.Context, want)
		}
	}
	return fig
}

// explain logs what a failed check needs to be understood: the instance's
// history, its outbox, and how many times the agents saw each of its keys.
func explain(t testing.TB, st record.Store, id string, seen map[string]int) {
	t.Helper()
	ctx := context.Background()
	history, err := st.History(ctx, id)
	if err != nil {
		t.Logf("instance %s: history: %v", id, err)
	}
	for _, e := range history {
		t.Logf("  %s %-12s step %d state %s agent %s attempt %d trigger %q error %q detail %q",
			e.Time.Format("15:04:05.000"), e.Kind, e.Step, e.State, e.Agent, e.Attempt, e.Trigger, e.Error, e.Detail)
	}
	out, err := st.Outbox(ctx, id)
	t.Logf("  outbox %+v (%v)", out, err)
	var keys []string
	for k, n := range seen {
		if strings.HasPrefix(k, id+":") {
			keys = append(keys, fmt.Sprintf("%s×%d", strings.TrimPrefix(k, id), n))
		}
	}
	slices.Sort(keys)
	t.Logf("  keys the agents saw: %v", keys)
}
