package engine_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
	"go.uber.org/goleak"
)

func TestEngine_Rejection(t *testing.T) {
	r := newSimRun(t, "reject.yaml", map[string][]reply{
		"asker":    {ok("ask", nil)},
		"reviewer": {reject("too busy")},
	})
	res, h := r.finish(nil)
	wantCompleted(t, res, "BOUNCED")
	if got, want := path(h), []string{"START", "REVIEW", "BOUNCED"}; !slices.Equal(got, want) {
		t.Errorf("path: got %v, want %v (the transition into REVIEW has happened)", got, want)
	}
	want := map[string]any{"why": "too busy", "state": "REVIEW", "agent": "reviewer"}
	if !reflect.DeepEqual(res.Context, want) {
		t.Errorf("got context %v, want %v (the outcome belongs to the target's state and agent)", res.Context, want)
	}
	if n := len(r.script.runsOf("reviewer")); n != 1 {
		t.Errorf("got %d reviewer runs, want 1 (a rejection is never retried)", n)
	}
	if n := len(entries(h, record.KindRetry)); n != 0 {
		t.Errorf("got %d retries, want 0", n)
	}
	outs := entries(h, record.KindOutcome)
	if last := outs[len(outs)-1]; last.Trigger != "rejected" || last.State != "REVIEW" || last.Agent != "reviewer" || last.Error != "too busy" {
		t.Errorf("got outcome %+v, want rejected in REVIEW by reviewer with the reason", last)
	}
	if st := handoffStats(t, r.eng); st.Total != 1 || st.Rejected != 1 || st.Accepted != 0 {
		t.Fatalf("got hand-off stats %+v, want one sent and rejected", st)
	}
	// The sender's hand-off is recorded rejected, with the reason.
	if recs := handoffHistory(t, r.eng, res.ID); len(recs) != 1 || recs[0].From != "asker" || recs[0].Status != handoff.StatusRejected || recs[0].Detail != "too busy" {
		t.Errorf("got records %+v, want asker's hand-off rejected with the reason", recs)
	}
}

func TestEngine_ReservedOutcomeFromAnAgentIsAnError(t *testing.T) {
	for _, trig := range []string{"error", "timeout", "rejected", "joined", "partial", "conflict", ""} {
		t.Run("trigger "+trig, func(t *testing.T) {
			r := newSimRun(t, "reject.yaml", map[string][]reply{"asker": {ok(trig, map[string]any{"x": 1})}})
			res, h := r.finish(nil)
			wantCompleted(t, res, "ERRORED")
			want := `engine: reserved trigger: agent asker reported "` + trig + `"`
			if trig == "" {
				want = "engine: agent asker reported no trigger"
			}
			if res.Context["why"] != want || res.Context["kind"] != "error" {
				t.Errorf("got error.message %v kind %v, want %q and error", res.Context["why"], res.Context["kind"], want)
			}
			if n := len(r.script.runsOf("asker")); n != 1 {
				t.Errorf("got %d runs, want 1 (not retried)", n)
			}
			if outs := entries(h, record.KindOutcome); len(outs) != 1 || outs[0].Trigger != "error" {
				t.Errorf("got outcomes %+v, want one error outcome", outs)
			}
		})
	}
}

func TestEngine_Terminal(t *testing.T) {
	tests := []struct {
		name        string
		trigger     string
		wantOutcome string
		wantNotice  string // the agent receiving a final notice, or ""
	}{
		{"without a final notice", "quiet", "QUIET", ""},
		{"with a final notice to a Go agent", "audit", "AUDIT", "auditor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "terminal.yaml", map[string][]reply{
				"closer":  {ok(tt.trigger, map[string]any{"code": 7})},
				"auditor": nil, // a run of the auditor would fail the test: a notice is not a run
			})
			res, h := r.finish(nil)
			wantCompleted(t, res, tt.wantOutcome)
			if res.State != tt.wantOutcome || res.Steps != 1 {
				t.Errorf("got state %s steps %d, want %s and 1 (a final notice is not a step)", res.State, res.Steps, tt.wantOutcome)
			}
			notices := entries(h, record.KindFinalNotice)
			st := handoffStats(t, r.eng)
			if tt.wantNotice == "" {
				if len(notices) != 0 || st.Total != 0 {
					t.Errorf("got notices %+v hand-off stats %+v, want nothing sent", notices, st)
				}
				return
			}
			if len(notices) != 1 || notices[0].To != tt.wantNotice || notices[0].From != "closer" || notices[0].Error != "" {
				t.Fatalf("got final notices %+v, want one closer->%s", notices, tt.wantNotice)
			}
			if st.Total != 1 || st.Accepted != 1 || st.ReceivedBy[tt.wantNotice] != 1 {
				t.Errorf("got hand-off stats %+v, want one sent to %s and accepted (delivered)", st, tt.wantNotice)
			}
			if got := entries(h, record.KindCompleted); len(got) != 1 || got[0].State != tt.wantOutcome {
				t.Errorf("got completed entries %+v, want one in %s", got, tt.wantOutcome)
			}
		})
	}
}

func TestEngine_Terminal_FinalNoticeToAnExternalAgent(t *testing.T) {
	r := newSimRun(t, "terminal.yaml", map[string][]reply{"closer": {ok("loud", map[string]any{"code": 7})}})
	inst := r.start(nil)
	res := inst.Result()
	wantCompleted(t, res, "LOUD")
	m := receiveOne(t, busOf(r.eng), "monitor")
	if m.Type != transport.MessageHandoff || m.From != "closer" {
		t.Fatalf("got %s from %s, want a HANDOFF from closer", m.Type, m.From)
	}
	checks := map[string]any{
		"task_description": "closed with 7",
		"context":          map[string]any{"code": 7},
		"previous_result":  map[string]any{"code": 7},
		"constraints":      map[string]any{"channel": "email"},
		"reason":           "rule",
	}
	for k, want := range checks {
		if got := m.Content[k]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v", k, got, want)
		}
	}
	if res.Steps != 1 {
		t.Errorf("got %d steps, want 1", res.Steps)
	}
}

func TestEngine_Terminal_UndeliverableFinalNoticeIsDeadLettered(t *testing.T) {
	r := newSimRun(t, "terminal.yaml", map[string][]reply{"closer": {ok("loud", map[string]any{"code": 7})}})
	// The monitor's mailbox holds one message: fill it.
	filler := &transport.Message{Type: transport.MessageNotification, From: "closer", To: "monitor", Content: map[string]any{"action": "fill"}}
	if err := busOf(r.eng).Send(t.Context(), filler); err != nil {
		t.Fatalf("fill the monitor's mailbox: %v", err)
	}
	res, h := r.finish(nil)
	wantCompleted(t, res, "LOUD")
	// The notice is committed with the step that completes the instance and
	// sent after it: the bus's refusal is recorded by a second entry.
	notices := entries(h, record.KindFinalNotice)
	if len(notices) != 2 || notices[0].Error != "" || !strings.Contains(notices[1].Error, "queue full") || notices[1].HandoffID != notices[0].HandoffID {
		t.Fatalf("got final notices %+v, want the notice, then its failure recording the full mailbox", notices)
	}
	var found bool
	for _, d := range busOf(r.eng).DeadLetters() {
		if d.Message.To == "monitor" && d.Message.Type == transport.MessageHandoff {
			found = true
			if d.Reason != transport.ReasonQueueOverflow {
				t.Errorf("got dead-letter reason %s, want %s", d.Reason, transport.ReasonQueueOverflow)
			}
		}
	}
	if !found {
		t.Errorf("got dead letters %+v, want the final notice to monitor", busOf(r.eng).DeadLetters())
	}
	// The store keeps the dead letter too, tied to its instance and step.
	kept, err := r.eng.Store().DeadLetters(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 || kept[0].To != "monitor" || kept[0].Reason != string(transport.ReasonQueueOverflow) ||
		kept[0].Instance == "" || kept[0].Key == "" || kept[0].Step != notices[0].Step || kept[0].Seq != 1 {
		t.Errorf("store kept dead letters %+v, want the notice to monitor of step %d", kept, notices[0].Step)
	}
	if m := busOf(r.eng).Metrics(); !m.Balanced() {
		t.Errorf("got bus metrics %+v, want accepted = delivered + dead-lettered + queued", m)
	}
}

func TestEngine_ReenteringAStateIsANewVisit(t *testing.T) {
	r := newSimRun(t, "reenter.yaml", map[string][]reply{
		"looper": {fail("flaky"), ok("again", nil), ok("done", nil)},
	})
	res, h := r.finish(nil)
	wantCompleted(t, res, "DONE") // done_first holds: attempt 1 of visit 2
	if got, want := path(h), []string{"LOOP", "LOOP", "DONE"}; !slices.Equal(got, want) {
		t.Errorf("path: got %v, want %v", got, want)
	}
	var attempts, steps []int
	for _, c := range r.script.runsOf("looper") {
		attempts = append(attempts, c.Task.Attempt)
		steps = append(steps, c.Task.Step)
		if c.Task.From != "" {
			t.Errorf("step %d: got from %q, want an engine dispatch", c.Task.Step, c.Task.From)
		}
	}
	if want := []int{1, 2, 1}; !slices.Equal(attempts, want) {
		t.Errorf("attempts: got %v, want %v", attempts, want)
	}
	if want := []int{1, 2, 3}; !slices.Equal(steps, want) {
		t.Errorf("steps: got %v, want %v", steps, want)
	}
	if n := len(entries(h, record.KindHandoff)); n != 0 {
		t.Errorf("got %d hand-off entries, want 0", n)
	}
	if st := handoffStats(t, r.eng); st.Total != 0 {
		t.Errorf("got hand-off stats %+v, want none sent", st)
	}
	if n := len(entries(h, record.KindDispatch)); n != 3 {
		t.Errorf("got %d dispatch entries, want 3 (start, retry, re-entry)", n)
	}
	for _, ev := range r.events {
		if ev.Type == engine.EventAgentHandoff || ev.Type == engine.EventAgentChanged {
			t.Errorf("got event %+v, want no hand-off or agent change", ev)
		}
	}
}

func TestEngine_ReenteringAStateRespectsItsVisits(t *testing.T) {
	r := newSimRun(t, "reenter.yaml", map[string][]reply{"looper": repeat(4, ok("again", nil))})
	res, _ := r.finish(nil)
	wantFailed(t, res, "state LOOP would be visited 5 times (max 4)")
	if !errors.Is(res.Err, engine.ErrLimit) {
		t.Errorf("got %v, want ErrLimit", res.Err)
	}
}

// A Go agent's in-process mailbox has its capacity: work it refuses fails
// its run (the state's retry policy applies) and is kept as a dead letter.
// Three instances meet a reviewer that runs one at a time with room for one
// more: the third one's hand-off is refused.
func TestEngine_RunRefusedByAFullMailboxIsAFailedRun(t *testing.T) {
	tests := []struct {
		name        string
		work        time.Duration // how long each review takes
		wantOutcome string
		wantRuns    int // reviewer runs for the third instance
		wantSteps   int
	}{
		{"retried once the mailbox has room", 500 * time.Millisecond, "DONE", 1, 3},
		{"every retry refused: outcome error", 10 * time.Second, "ERRORED", 0, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				runs := map[string]int{}
				reviewer := registry.HandlerFunc(func(ctx context.Context, task *registry.Task) (registry.Outcome, error) {
					mu.Lock()
					runs[task.InstanceID]++
					mu.Unlock()
					time.Sleep(tt.work)
					return registry.Outcome{Trigger: "reviewed"}, nil
				})
				var told []engine.Event // the refusals, as observers hear of them
				observe := engine.WithObserver(func(ev engine.Event) {
					if ev.Type == engine.EventDeadLettered || (ev.Type == engine.EventAgentReported && ev.Kind == "transport") {
						mu.Lock()
						told = append(told, ev)
						mu.Unlock()
					}
				})
				eng := poolEngine(t, "lane.yaml", map[string]registry.Handler{"asker": answer("ask", nil), "reviewer": reviewer}, observe)
				defer eng.Close()
				var insts []*engine.Instance
				for range 3 {
					inst, err := eng.Start(t.Context(), nil)
					if err != nil {
						t.Fatal(err)
					}
					insts = append(insts, inst)
					synctest.Wait() // in order: the first runs, the second waits, the third is refused
				}
				var res []engine.Result
				for _, inst := range insts {
					r, err := inst.Wait(t.Context())
					if err != nil {
						t.Fatal(err)
					}
					res = append(res, r)
				}
				wantCompleted(t, res[0], "DONE")
				wantCompleted(t, res[1], "DONE")
				third := res[2]
				wantCompleted(t, third, tt.wantOutcome)
				if runs[third.ID] != tt.wantRuns {
					t.Errorf("got %d reviewer runs for the third instance, want %d", runs[third.ID], tt.wantRuns)
				}
				if third.Steps != tt.wantSteps {
					t.Errorf("got %d steps, want %d", third.Steps, tt.wantSteps)
				}
				h := history(t, insts[2])
				ran := entries(h, record.KindAgentRun)
				if len(ran) < 2 || ran[1].Agent != "reviewer" || !strings.Contains(ran[1].Error, "queue full") || ran[1].ErrorKind != "transport" {
					t.Errorf("got runs %+v, want the refused hand-off recorded as reviewer's failed run of kind transport", ran)
				}
				dead, err := eng.Store().DeadLetters(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				refused := 0
				for _, d := range dead {
					if d.To == "reviewer" && d.Instance == third.ID && d.Reason == string(transport.ReasonQueueOverflow) {
						refused++
					}
				}
				if want := tt.wantSteps - 1 - tt.wantRuns; refused != want {
					t.Errorf("got %d dead letters for the third instance's reviewer runs, want %d", refused, want)
				}
				mu.Lock()
				var deadTold, failedTold int
				for _, ev := range told {
					switch {
					case ev.InstanceID != third.ID || ev.Agent != "reviewer" || ev.State != "REVIEW":
						t.Errorf("got %+v, want events of the third instance's reviewer runs", ev)
					case ev.Type == engine.EventDeadLettered && ev.Reason == string(transport.ReasonQueueOverflow) && ev.Err != nil:
						deadTold++
					case ev.Type == engine.EventAgentReported:
						failedTold++
					}
				}
				mu.Unlock()
				if want := tt.wantSteps - 1 - tt.wantRuns; deadTold != want || failedTold != want {
					t.Errorf("got %d dead_lettered and %d failed agent_reported events, want %d of each", deadTold, failedTold, want)
				}
				q := eng.AgentQueues()["reviewer"]
				if q.Sent != q.Taken || q.Queued != 0 || q.Refused != uint64(tt.wantSteps-1-tt.wantRuns) {
					t.Errorf("got reviewer's accounting %+v, want every item sent taken and the refusals counted", q)
				}
			})
		})
	}
}
