package engine_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
)

// begin starts an instance and runs the work that queued, without moving
// the simulated clock: no timeout fires.
func (r *simRun) begin(input map[string]any) *engine.Instance {
	r.t.Helper()
	inst, err := r.eng.Start(context.Background(), input)
	if err != nil {
		r.t.Fatalf("Start: %v", err)
	}
	r.ready()
	return inst
}

// ready runs the queued work (Go agents' runs) without moving the clock.
func (r *simRun) ready() {
	r.t.Helper()
	if err := r.sim.RunReady(context.Background()); err != nil {
		r.t.Fatalf("sim.RunReady: %v", err)
	}
}

// take returns the next hand-off waiting in an external agent's mailbox,
// skipping the notices (ERROR messages) the bus sends.
func (r *simRun) take(agent string) *transport.Message {
	r.t.Helper()
	for {
		msgs, err := busOf(r.eng).Receive(agent, 1)
		if err != nil || len(msgs) == 0 {
			r.t.Fatalf("no hand-off waiting for %s (err %v)", agent, err)
		}
		if msgs[0].Type == transport.MessageHandoff {
			return msgs[0]
		}
	}
}

// answer plays an external agent: it reports out (or runErr) for the
// agent's next hand-off, runs the work that queued and returns what the
// engine answered.
func (r *simRun) answer(agent string, out registry.Outcome, runErr error) error {
	r.t.Helper()
	err := reportWork(context.Background(), r.eng, r.take(agent), out, runErr)
	r.ready()
	return err
}

// finished reports whether inst has ended, for runUntil.
func finished(inst *engine.Instance) func() bool {
	return func() bool {
		select {
		case <-inst.Done():
			return true
		default:
			return false
		}
	}
}

// found is a branch's successful reply.
func found(n int) registry.Outcome {
	return registry.Outcome{Trigger: "found", Result: map[string]any{"n": n}}
}

// mapKeys returns the sorted keys of a map held in an instance context.
func mapKeys(t testing.TB, v any) []string {
	t.Helper()
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("got %T, want map[string]any", v)
	}
	return slices.Sorted(maps.Keys(m))
}

// wantRunning fails the test unless inst still waits in state.
func wantRunning(t testing.TB, inst *engine.Instance, state string) {
	t.Helper()
	res := inst.Result()
	if res.Status != record.StatusRunning || res.State != state {
		t.Fatalf("got status %s in state %s (err %v), want running in %s", res.Status, res.State, res.Err, state)
	}
}

// lateSteps returns the steps of the late replies recorded.
func lateSteps(h []record.Entry) []int {
	var out []int
	for _, e := range entries(h, record.KindLateReply) {
		out = append(out, e.Step)
	}
	return out
}

var branches = []string{"a", "b", "c", "d"}

// branchStep is the step of branch agent's run in join.yaml: lead runs
// step 1, then a, b, c and d in that order.
func branchStep(agent string) int { return 2 + slices.Index(branches, agent) }

func stepsOf(agents []string) []int {
	out := make([]int, 0, len(agents))
	for _, a := range agents {
		out = append(out, branchStep(a))
	}
	return out
}

// joinStrategies are the join strategies of join.yaml, whose parallel
// states are named PREFIX_FAIL and PREFIX_PROCEED after their policy.
var joinStrategies = []struct {
	name   string
	prefix string
	needed int // replies of the four branches the strategy needs
}{
	{"all", "all", 4},
	{"any", "any", 1},
	{"majority", "maj", 3},
	{"quorum_2", "quorum", 2},
}

var partialPolicies = []string{"fail", "proceed"}

// startJoin starts a join.yaml instance in the parallel state of strategy
// prefix with policy; the four branches are external and wait for answers.
func startJoin(t *testing.T, prefix, policy string) (*simRun, *engine.Instance, string) {
	t.Helper()
	r := newSimRun(t, "join.yaml", map[string][]reply{"lead": {ok(prefix+"_"+policy, nil)}})
	inst := r.begin(nil)
	state := strings.ToUpper(prefix + "_" + policy)
	wantRunning(t, inst, state)
	return r, inst, state
}

func TestParallel_Join_OnTimeThenLateReplies(t *testing.T) {
	for _, s := range joinStrategies {
		for _, policy := range partialPolicies {
			t.Run(s.name+"/"+policy, func(t *testing.T) {
				r, inst, state := startJoin(t, s.prefix, policy)
				for k, agent := range branches[:s.needed] {
					wantRunning(t, inst, state)
					if err := r.answer(agent, found(k), nil); err != nil {
						t.Fatalf("answer %s: %v", agent, err)
					}
				}
				res := inst.Result()
				wantCompleted(t, res, "JOINED")
				if got, want := mapKeys(t, res.Context["results"]), branches[:s.needed]; !slices.Equal(got, want) {
					t.Errorf("got results from %v, want %v", got, want)
				}
				if got := mapKeys(t, res.Context["errors"]); len(got) != 0 {
					t.Errorf("got errors from %v, want none", got)
				}
				if !r.sim.Now().Equal(epoch) {
					t.Errorf("got the join completing at %v, want at once (%v)", r.sim.Now(), epoch)
				}

				late := branches[s.needed:]
				for _, agent := range late {
					if err := r.answer(agent, found(9), nil); !errors.Is(err, engine.ErrStaleReport) {
						t.Errorf("late answer of %s: got %v, want ErrStaleReport", agent, err)
					}
				}
				h := history(t, inst)
				if got, want := lateSteps(h), stepsOf(late); !slices.Equal(got, want) {
					t.Errorf("got late replies for steps %v, want %v", got, want)
				}
				joined := entries(h, record.KindJoined)
				if len(joined) != 1 || joined[0].Trigger != "joined" || !strings.HasPrefix(joined[0].Detail, fmt.Sprintf("%d of 4 replies", s.needed)) {
					t.Errorf("got joined entries %+v, want one joined with %d of 4 replies", joined, s.needed)
				}
				if after := inst.Result(); after.Status != res.Status || after.Steps != 5 || len(after.Context) != len(res.Context) {
					t.Errorf("got %+v after the late replies, want %+v with 5 steps", after, res)
				}
			})
		}
	}
}

func TestParallel_Join_Timeout(t *testing.T) {
	for _, s := range joinStrategies {
		for _, policy := range partialPolicies {
			t.Run(s.name+"/"+policy, func(t *testing.T) {
				r, inst, state := startJoin(t, s.prefix, policy)
				arrived := branches[:s.needed-1]
				for k, agent := range arrived {
					if err := r.answer(agent, found(k), nil); err != nil {
						t.Fatalf("answer %s: %v", agent, err)
					}
				}
				wantRunning(t, inst, state)
				r.runUntil(finished(inst))
				if want := epoch.Add(10 * time.Second); !r.sim.Now().Equal(want) {
					t.Errorf("got the join ending at %v, want at its timeout %v", r.sim.Now(), want)
				}
				res := inst.Result()
				detail := fmt.Sprintf("join of %s timed out: %d of 4 replies, %d needed", state, len(arrived), s.needed)
				if policy == "fail" {
					wantFailed(t, res, detail)
				} else {
					wantCompleted(t, res, "PARTIAL")
					if got := mapKeys(t, res.Context["results"]); !slices.Equal(got, arrived) {
						t.Errorf("got results from %v, want %v", got, arrived)
					}
					joined := entries(history(t, inst), record.KindJoined)
					if len(joined) != 1 || joined[0].Trigger != "partial" || joined[0].Detail != detail {
						t.Errorf("got joined entries %+v, want one partial with detail %q", joined, detail)
					}
				}
				late := branches[s.needed-1]
				if err := r.answer(late, found(9), nil); !errors.Is(err, engine.ErrStaleReport) {
					t.Errorf("late answer of %s: got %v, want ErrStaleReport", late, err)
				}
				if got, want := lateSteps(history(t, inst)), []int{branchStep(late)}; !slices.Equal(got, want) {
					t.Errorf("got late replies for steps %v, want %v", got, want)
				}
				if after := inst.Result(); after.Status != res.Status || after.Outcome != res.Outcome {
					t.Errorf("got %s %q after the late reply, want %s %q", after.Status, after.Outcome, res.Status, res.Outcome)
				}
			})
		}
	}
}

// branchFailures are the ways a branch run fails, with what result.errors
// then says about it.
var branchFailures = []struct {
	name string
	out  registry.Outcome
	err  error
	want string
}{
	{"error", registry.Outcome{}, errors.New("supplier down"), "supplier down"},
	{"reject", registry.Outcome{}, registry.Reject("queue busy"), "queue busy"},
	{"reserved trigger", registry.Outcome{Trigger: "joined"}, nil, `reported "joined"`},
	{"permanent error", registry.Outcome{}, registry.Permanent(errors.New("bad request")), "bad request"},
}

func TestParallel_Join_OutOfReach(t *testing.T) {
	for _, s := range joinStrategies {
		for _, policy := range partialPolicies {
			t.Run(s.name+"/"+policy, func(t *testing.T) {
				r, inst, state := startJoin(t, s.prefix, policy)
				// The last 4-needed+1 branches fail: the strategy is then out
				// of reach whatever the others answer.
				failing := branches[s.needed-1:]
				others := branches[:s.needed-1]
				want := map[string]string{}
				for k, agent := range failing {
					wantRunning(t, inst, state)
					f := branchFailures[k%len(branchFailures)]
					want[agent] = f.want
					if err := r.answer(agent, f.out, f.err); err != nil {
						t.Fatalf("answer %s: %v", agent, err)
					}
				}
				if policy == "fail" {
					res := inst.Result()
					wantFailed(t, res, fmt.Sprintf("join of %s cannot be met: 0 of 4 replies, %d needed", state, s.needed))
					if !r.sim.Now().Equal(epoch) {
						t.Errorf("got the join failing at %v, want at once (%v), not at its timeout", r.sim.Now(), epoch)
					}
					for _, agent := range others {
						if err := r.answer(agent, found(1), nil); !errors.Is(err, engine.ErrStaleReport) {
							t.Errorf("answer of %s after the failure: got %v, want ErrStaleReport", agent, err)
						}
					}
					if got := lateSteps(history(t, inst)); !slices.Equal(got, stepsOf(others)) {
						t.Errorf("got late replies for steps %v, want %v", got, stepsOf(others))
					}
					return
				}
				// on_partial proceed waits for every branch, so that the
				// partial result holds all that arrived.
				for k, agent := range others {
					wantRunning(t, inst, state)
					if err := r.answer(agent, found(k), nil); err != nil {
						t.Fatalf("answer %s: %v", agent, err)
					}
				}
				res := inst.Result()
				wantCompleted(t, res, "PARTIAL")
				if !r.sim.Now().Equal(epoch) {
					t.Errorf("got the join ending at %v, want once every branch answered (%v)", r.sim.Now(), epoch)
				}
				if got := mapKeys(t, res.Context["results"]); !slices.Equal(got, others) {
					t.Errorf("got results from %v, want %v", got, others)
				}
				errs, _ := res.Context["errors"].(map[string]any)
				if got := mapKeys(t, errs); !slices.Equal(got, failing) {
					t.Fatalf("got errors from %v, want %v", got, failing)
				}
				for agent, text := range want {
					if msg, _ := errs[agent].(string); !strings.Contains(msg, text) {
						t.Errorf("got errors.%s = %q, want it to contain %q", agent, msg, text)
					}
				}
			})
		}
	}
}

// A reply that comes after the join's deadline, before its timer has run,
// is late: the join times out first.
func TestParallel_Join_ReplyPastDeadlineBeforeTimerRuns(t *testing.T) {
	for _, policy := range partialPolicies {
		t.Run(policy, func(t *testing.T) {
			r, inst, state := startJoin(t, "all", policy)
			for k, agent := range []string{"a", "b"} {
				if err := r.answer(agent, found(k), nil); err != nil {
					t.Fatalf("answer %s: %v", agent, err)
				}
			}
			r.sim.Advance(11 * time.Second)
			if err := reportWork(context.Background(), r.eng, r.take("c"), found(3), nil); err != nil {
				t.Fatalf("answer c: %v", err)
			}
			res := inst.Result()
			if policy == "fail" {
				wantFailed(t, res, "join of "+state+" timed out: 2 of 4 replies, 4 needed")
			} else {
				wantCompleted(t, res, "PARTIAL")
				if got := mapKeys(t, res.Context["results"]); !slices.Equal(got, []string{"a", "b"}) {
					t.Errorf("got results from %v, want [a b]", got)
				}
			}
			if err := r.answer("d", found(4), nil); !errors.Is(err, engine.ErrStaleReport) {
				t.Errorf("answer of d: got %v, want ErrStaleReport", err)
			}
			if got, want := lateSteps(history(t, inst)), []int{4, 5}; !slices.Equal(got, want) {
				t.Errorf("got late replies for steps %v, want %v", got, want)
			}
		})
	}
}
