package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/merge"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// join is the fan-out of a parallel state: one branch run per agent of the
// state, and the replies gathered until the join's strategy is met.
type join struct {
	state    *rules.State
	branches []*run // in the state's agents order
	needed   int
	replies  []branchReply // successful replies, in arrival order
	failed   map[string]string
	started  time.Time
	timer    clock.Timer
}

type branchReply struct {
	agent  string
	result map[string]any
}

func (j *join) branch(step int) *run {
	for _, r := range j.branches {
		if r.step == step {
			return r
		}
	}
	return nil
}

// fail records why a branch gave no reply.
func (j *join) fail(agent, why string) {
	if j.failed == nil {
		j.failed = make(map[string]string, 1)
	}
	j.failed[agent] = why
}

func (j *join) pending() int {
	n := 0
	for _, r := range j.branches {
		if !r.ended {
			n++
		}
	}
	return n
}

// startBranches enters a parallel state: it hands off to each of its agents,
// in the state's agents order, each branch run a step of its own, and arms
// the join's timeout.
func (i *instance) startBranches(ctx context.Context, d dispatch) {
	st := i.state
	j := &join{state: st, needed: len(st.Agents), started: i.e.clock.Now()}
	if st.Join != nil {
		j.needed = st.Join.Needed(len(st.Agents))
	}
	// One allocation each for the runs, the branch list and the replies:
	// the join never holds more replies than it needs.
	runs := make([]run, len(st.Agents))
	j.branches = make([]*run, len(st.Agents))
	j.replies = make([]branchReply, 0, j.needed)
	i.join, i.run = j, nil
	for k, agent := range st.Agents {
		i.step++
		r := &runs[k]
		*r = run{
			step: i.step, attempt: 1, state: st, agent: agent, from: d.from, kind: runBranch,
			description: d.description, reason: d.reason, priority: d.priority,
			previous: d.previous, constraints: d.constraints,
		}
		if r.from == agent {
			r.from = ""
		}
		j.branches[k] = r
		if err := i.launch(ctx, r, d.rule); err != nil {
			r.ended = true
			j.fail(agent, err.Error())
			ran := record.Entry{Kind: record.KindAgentRun, Step: r.step, State: st.Name, Agent: agent, Attempt: 1, Error: err.Error()}
			i.note(ran)
			i.runEnded(r, &ran, err)
		}
	}
	if st.Join != nil && st.Join.Timeout > 0 {
		j.timer = i.e.clock.AfterFunc(st.Join.Timeout, func() {
			i.e.exec.Submit(func() { i.joinTimedOut(i.e.ctx, j) })
		})
	}
	i.checkJoin(ctx, false)
}

// branchDone records a branch's reply. A branch's own trigger is recorded,
// not matched; a branch that fails, times out or rejects counts as missing.
// Branches are not retried and cannot delegate.
func (i *instance) branchDone(ctx context.Context, r *run, out registry.Outcome, runErr error, isReject bool) {
	j := i.join
	if st := j.state; st.Join != nil && st.Join.Timeout > 0 && i.e.clock.Now().Sub(j.started) > st.Join.Timeout {
		// The reply came after the join's deadline (a run that took its
		// time on a simulated clock, or a timer not yet run): the join
		// times out first and the reply is late.
		i.note(record.Entry{Kind: record.KindLateReply, Step: r.step, State: st.Name, Agent: r.agent, Trigger: out.Trigger, Result: out.Result, Error: errText(runErr)})
		i.checkJoin(ctx, true)
		return
	}
	handoffTo := ""
	if out.Handoff != nil {
		handoffTo = out.Handoff.To
	}
	j.take(r, out.Trigger, out.Result, errText(runErr), handoffTo)
	i.checkJoin(ctx, false)
}

// take counts a branch's reply: a failure, a reserved trigger or a request
// to hand off counts as missing; anything else is a reply.
func (j *join) take(r *run, trigger string, result map[string]any, errMsg, handoffTo string) {
	switch {
	case errMsg != "":
		j.fail(r.agent, errMsg)
	case reserved(trigger):
		j.fail(r.agent, fmt.Sprintf("%v: agent %s reported %q", ErrReservedTrigger, r.agent, trigger))
	case handoffTo != "":
		// The branch did not answer: it asked someone else to. Its result
		// is not a reply, so counting it would put a vote it never cast
		// into the merge.
		j.fail(r.agent, fmt.Sprintf("engine: branch %s of parallel state %s cannot delegate (it asked to hand off to %s)", r.agent, j.state.Name, handoffTo))
	default:
		j.replies = append(j.replies, branchReply{agent: r.agent, result: result})
	}
}

func (i *instance) joinTimedOut(ctx context.Context, j *join) {
	if i.e.closed.Load() {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.join != j || i.status.Finished() {
		return
	}
	i.checkJoin(ctx, true)
	i.commit(ctx)
}

// checkJoin completes the join when its strategy is met (outcome joined), or
// when it can no longer be met or its timeout has passed: with on_partial
// proceed the outcome is partial, otherwise the instance fails.
func (i *instance) checkJoin(ctx context.Context, timedOut bool) {
	j := i.join
	got, open := len(j.replies), j.pending()
	proceed := j.state.Join != nil && j.state.Join.OnPartial == rules.OnPartialProceed
	switch {
	case got >= j.needed:
		i.completeJoin(ctx, "joined")
	case timedOut || open == 0 || (got+open < j.needed && !proceed):
		// With on_partial proceed the join waits for every branch (or the
		// timeout) so that the partial result holds all that arrived; with
		// fail there is no point waiting once the strategy is out of reach.
		why := "cannot be met"
		if timedOut {
			why = "timed out"
		}
		detail := fmt.Sprintf("join of %s %s: %d of %d replies, %d needed", j.state.Name, why, got, len(j.branches), j.needed)
		if timedOut {
			for _, r := range j.branches {
				if !r.ended {
					j.fail(r.agent, "no reply within the join timeout")
				}
			}
		}
		if proceed {
			i.note(record.Entry{Kind: record.KindJoined, State: j.state.Name, Trigger: "partial", Detail: detail})
			i.completeJoin(ctx, "partial")
			return
		}
		i.stopBranches()
		i.fail(fmt.Errorf("engine: %s", detail))
	}
}

// completeJoin ends the fan-out: branches still running are cancelled (their
// replies will be recorded as late), the replies are merged, and the outcome
// is matched against the rules whose `from` is the state.
func (i *instance) completeJoin(ctx context.Context, outcome string) {
	j := i.join
	i.stopBranches()
	i.join = nil
	results := make(map[string]any, len(j.replies))
	for _, rep := range j.replies {
		results[rep.agent] = orEmpty(rep.result)
	}
	result := map[string]any{"results": results}
	if len(j.failed) > 0 {
		failed := make(map[string]any, len(j.failed))
		for a, msg := range j.failed {
			failed[a] = msg
		}
		result["errors"] = failed
	}
	if j.state.Merge != "" && len(j.replies) > 0 {
		d, err := i.e.resolve(j, i.e.clock.Now())
		if err != nil {
			i.fail(err)
			return
		}
		result["decision"] = d.Map()
		if !d.Resolved {
			outcome = "conflict"
		}
	}
	if outcome == "joined" || outcome == "conflict" {
		i.note(record.Entry{Kind: record.KindJoined, State: j.state.Name, Trigger: outcome, Detail: joinSummary(j)})
	}
	i.decide(ctx, outcome, result, rules.ErrorInfo{})
}

// resolve merges the replies with the state's strategy and counts it.
func (e *Engine) resolve(j *join, now time.Time) (merge.Decision, error) {
	replies := make([]merge.Reply, 0, len(j.replies))
	voters := make(map[string]merge.Voter, len(j.state.Agents))
	for level, id := range j.state.Agents {
		v := merge.Voter{Level: level}
		if a, ok := e.wf.Agent(id); ok {
			v.Expertise, v.Accuracy = a.Expertise, a.Accuracy
		}
		voters[id] = v
	}
	for order, rep := range j.replies {
		option, confidence := merge.OptionOf(rep.result)
		replies = append(replies, merge.Reply{
			Agent: rep.agent, Option: option, Confidence: confidence,
			Priority: rankOf(rep.result["priority"]), Order: order,
		})
	}
	start := e.clock.Now()
	d, err := merge.Decide(merge.Strategy(j.state.Merge), replies, voters)
	if err != nil {
		return d, fmt.Errorf("engine: merge of %s: %w", j.state.Name, err)
	}
	e.metrics.resolution(d, now.Sub(j.started), e.clock.Now().Sub(start))
	return d, nil
}

// rankOf reads a reply's priority: a rank number or a priority name.
func rankOf(v any) int {
	switch p := v.(type) {
	case int:
		return p
	case float64:
		return int(p)
	case string:
		if n, ok := rules.PriorityRank(p); ok {
			return n
		}
		if n, err := strconv.Atoi(p); err == nil {
			return n
		}
	}
	return 0
}

func joinSummary(j *join) string {
	agents := make([]string, 0, len(j.replies))
	for _, r := range j.replies {
		agents = append(agents, r.agent)
	}
	missing := make([]string, 0, len(j.failed))
	for a := range j.failed {
		missing = append(missing, a)
	}
	slices.Sort(missing)
	s := fmt.Sprintf("%d of %d replies (%s)", len(j.replies), len(j.branches), strings.Join(agents, ", "))
	if len(missing) > 0 {
		s += "; failed: " + strings.Join(missing, ", ")
	}
	return s
}

// stopBranches ends every branch still running and disarms the join timer.
func (i *instance) stopBranches() {
	j := i.join
	if j == nil {
		return
	}
	if j.timer != nil {
		j.timer.Stop()
	}
	for _, r := range j.branches {
		if r.ended {
			continue
		}
		r.ended = true
		r.stopTimers()
		r.stop()
		r.endSpan("", "", nil)
	}
}
