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

func (j *join) run(step int) *run {
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

func (j *join) open() int {
	n := 0
	for _, r := range j.branches {
		if !r.ended {
			n++
		}
	}
	return n
}

// parallelKind is the kind of a parallel state: a branch run per agent of
// the state, joined (see join).
type parallelKind struct{}

// enter enters a parallel state: it hands off to each of its agents, in
// the state's agents order, each branch run a step of its own, and arms
// the join's timeout.
func (parallelKind) enter(ctx context.Context, i *instance, d dispatch) {
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
	i.work, i.run = j, nil
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
	i.checkJoin(ctx, j, false)
}

// resume rebuilds the fan-out of a parallel state from the history of
// its current visit: its branches, the replies and failures committed
// before the restart, and its start (the join's deadline stays where it
// was). The branches still owed a reply are sent again from the outbox.
func (parallelKind) resume(ctx context.Context, i *instance, _ record.Snapshot, history []record.Entry, outbox []record.Outgoing) error {
	st := i.state
	// The visit began after the last transition into the state (or the
	// start, for an initial state).
	begin := 0
	for k := len(history) - 1; k >= 0; k-- {
		if e := history[k]; e.Kind == record.KindTransition && e.Next == st.Name {
			begin = k + 1
			break
		}
	}
	j := &join{state: st, needed: len(st.Agents)}
	if st.Join != nil {
		j.needed = st.Join.Needed(len(st.Agents))
	}
	byStep := map[int]*run{}
	for _, e := range history[begin:] {
		switch e.Kind {
		case record.KindHandoff, record.KindDispatch:
			if e.State != st.Name || byStep[e.Step] != nil {
				continue
			}
			if len(j.branches) == 0 {
				j.started = e.Time
			}
			r := &run{step: e.Step, attempt: 1, state: st, agent: e.Agent, from: e.From, kind: runBranch,
				key: registry.StepKey(i.id, e.Step), handoffID: e.HandoffID, description: e.Detail, priority: max(e.Priority, 1)}
			j.branches = append(j.branches, r)
			byStep[e.Step] = r
		case record.KindAgentRun:
			r := byStep[e.Step]
			if r == nil && e.State == st.Name && e.Step > stepBefore(history, begin) {
				// A branch whose hand-off was refused as the state was
				// entered: it has a failed run and no hand-off entry.
				r = &run{step: e.Step, attempt: 1, state: st, agent: e.Agent, kind: runBranch}
				j.branches = append(j.branches, r)
				byStep[e.Step] = r
			}
			if r == nil || r.ended {
				continue
			}
			r.ended = true
			j.take(r, e.Trigger, e.Result, e.Error, e.To)
		}
	}
	if len(j.branches) == 0 {
		return fmt.Errorf("%w %s: no branch of parallel state %s in its history", ErrCannotResume, i.id, st.Name)
	}
	i.work = j
	for _, o := range outbox {
		if o.Kind == record.OutgoingNotice {
			if err := i.resend(ctx, o, nil); err != nil {
				return err
			}
			continue
		}
		old := byStep[o.Step]
		if old == nil || old.ended {
			i.settleLater(o.Key) // not a branch still owed a reply
			continue
		}
		r := i.runOf(o, st)
		j.branches[slices.Index(j.branches, old)] = r // the branch list keeps its order
		byStep[o.Step] = r
		if err := i.resend(ctx, o, r); err != nil {
			return err
		}
	}
	for _, r := range j.branches {
		if !r.ended && r.key != "" && !i.isOpen(r.key) {
			// A branch with neither a reply nor an outbox item (a store
			// written before the outbox existed): send its work again.
			i.note(record.Entry{Kind: KindResumed, Step: r.step, State: st.Name, Agent: r.agent, From: r.from, Attempt: 1, Priority: r.priority, Detail: r.description})
			r.handler = i.e.handler(r.agent)
			i.queue(sending{out: i.outgoing(r, nil), r: r})
			i.arm(r)
			i.started(r, "", "resume")
		}
	}
	if st.Join != nil && st.Join.Timeout > 0 {
		left := j.started.Add(st.Join.Timeout).Sub(i.e.clock.Now())
		if left <= 0 {
			i.checkJoin(ctx, j, true)
			return nil
		}
		j.timer = i.e.clock.AfterFunc(left, func() {
			i.e.exec.Submit(func() { i.joinTimedOut(i.e.ctx, j) })
		})
	}
	i.checkJoin(ctx, j, false)
	return nil
}

// runDone records a branch's reply. A branch's own trigger is recorded,
// not matched; a branch that fails, times out or rejects counts as missing.
// Branches are not retried and cannot delegate.
func (j *join) runDone(ctx context.Context, i *instance, r *run, out registry.Outcome, runErr error, _, _ bool) {
	if st := j.state; st.Join != nil && st.Join.Timeout > 0 && i.e.clock.Now().Sub(j.started) > st.Join.Timeout {
		// The reply came after the join's deadline (a run that took its
		// time on a simulated clock, or a timer not yet run): the join
		// times out first and the reply is late.
		i.note(record.Entry{Kind: record.KindLateReply, Step: r.step, State: st.Name, Agent: r.agent, Trigger: out.Trigger, Result: out.Result, Error: errText(runErr)})
		i.checkJoin(ctx, j, true)
		return
	}
	handoffTo := ""
	if out.Handoff != nil {
		handoffTo = out.Handoff.To
	}
	j.take(r, out.Trigger, out.Result, errText(runErr), handoffTo)
	i.checkJoin(ctx, j, false)
}

// sendFailed counts a branch whose work the transport refused as missing.
func (j *join) sendFailed(ctx context.Context, i *instance, r *run, err error) {
	j.fail(r.agent, err.Error())
	i.checkJoin(ctx, j, false)
}

func (j *join) pending(buf []Pending) []Pending {
	for _, r := range j.branches {
		buf = appendRun(buf, PendingRun, r)
	}
	return buf
}

func (j *join) progress(out []RunProgress) []RunProgress {
	for _, r := range j.branches {
		out = appendProgress(out, r)
	}
	return out
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
	if i.work != j || i.status.Finished() {
		return
	}
	i.checkJoin(ctx, j, true)
	i.commit(ctx)
}

// checkJoin completes the join when its strategy is met (outcome joined), or
// when it can no longer be met or its timeout has passed: with on_partial
// proceed the outcome is partial, otherwise the instance fails.
func (i *instance) checkJoin(ctx context.Context, j *join, timedOut bool) {
	got, open := len(j.replies), j.open()
	proceed := j.state.Join != nil && j.state.Join.OnPartial == rules.OnPartialProceed
	switch {
	case got >= j.needed:
		i.completeJoin(ctx, j, "joined")
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
			i.completeJoin(ctx, j, "partial")
			return
		}
		j.stop()
		i.fail(fmt.Errorf("engine: %s", detail))
	}
}

// completeJoin ends the fan-out: branches still running are cancelled (their
// replies will be recorded as late), the replies are merged, and the outcome
// is matched against the rules whose `from` is the state.
func (i *instance) completeJoin(ctx context.Context, j *join, outcome string) {
	i.endWork(ctx)
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

// stop ends every branch still running and disarms the join timer.
func (j *join) stop() {
	if j.timer != nil {
		j.timer.Stop()
	}
	for _, r := range j.branches {
		abandon(r)
	}
}

func (j *join) end(context.Context) { j.stop() }
