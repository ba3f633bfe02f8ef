package scenario

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton/record"
)

// Recording is an instance as a store or a server keeps it: its last
// snapshot and its history.
type Recording struct {
	Snapshot record.Snapshot
	History  []record.Entry
}

// ErrNotFinished is FromHistory's answer for an instance that is still
// running or was cancelled: a scenario replays an instance to its end,
// completed or failed.
var ErrNotFinished = errors.New("scenario: the instance has not completed or failed")

// unanswered is the error of a reply made up for a run whose agent never
// answered while the instance lived: it comes after the instance's end.
const unanswered = "no reply recorded"

// FromHistory turns a recorded instance into the scenario that replays it:
// its input; every agent's replies in the order the runs were sent, each
// with its trigger and result, or its error (kind, retryable), rejection,
// dynamic hand-off or the user's selection, its usage, and its delay (from
// the work's sending to the reply, on the history's clock); the signals it
// accepted, each with its delay from the start of the wait; and what it
// must end with (status, outcome, states, hand-offs, context, error, and
// the usage totals when its runs reported usage).
//
// children holds the instances its workflow states started, and theirs
// (the ids the `child` entries name): their runs and signals are scripted
// in the same scenario, in run order. A run that timed out is replayed
// with its late reply when the history has one; a run never answered gets
// an error that comes after the instance's end.
//
// The scenario's Workflow and File are left empty for the caller to set.
func FromHistory(root Recording, children ...Recording) (*Scenario, error) {
	snap := root.Snapshot
	switch snap.Status {
	case record.StatusCompleted, record.StatusFailed:
	default:
		return nil, fmt.Errorf("%w: instance %s is %s", ErrNotFinished, snap.ID, snap.Status)
	}
	kids := map[string]Recording{}
	for _, c := range children {
		kids[c.Snapshot.ID] = c
	}
	b := &builder{ids: strings.NewReplacer(snap.ID, counter()())}
	b.flatten(root, kids, map[string]bool{})
	s := &Scenario{
		Name:   fmt.Sprintf("instance %s of %s version %d", snap.ID, snap.Workflow, snap.Version),
		Input:  b.input(root),
		Agents: map[string][]Reply{},
	}
	b.replies(s)
	b.signals(s)
	_, states, handoffs := Trace(root.History)
	s.Expect = Expect{
		Status: string(snap.Status), Outcome: snap.Outcome,
		States: states, Handoffs: handoffs,
		Context: b.object(snap.Context),
	}
	if t := snap.Usage.Totals; t.Tokens != 0 || t.Cost != 0 {
		tokens, cost := t.Tokens, t.Cost
		s.Expect.Usage = &ExpectUsage{Tokens: &tokens, Cost: &cost}
	}
	for _, en := range root.History {
		// The recorded run had them: its replay has them too.
		s.Expect.ConditionErrors = s.Expect.ConditionErrors || en.Kind == record.KindCondition
	}
	if s.Expect.Handoffs == nil {
		s.Expect.Handoffs = []string{}
	}
	if snap.Status == record.StatusFailed {
		s.Expect.Outcome = ""
		s.Expect.Error = b.ids.Replace(snap.Error)
	}
	return s, nil
}

// event is one entry of the flattened histories: a child's entries come
// where its parent started it, so that runs and signals are in the order
// the script meets them.
type event struct {
	inst  int // the instance's index in builder.insts
	entry record.Entry
}

type builder struct {
	insts  []Recording
	events []event
	ids    *strings.Replacer // the recorded root id to the replay's
	end    time.Time         // the latest entry of all
}

// flatten appends rec's entries to b.events, each child's entries right
// after the entry that started it.
func (b *builder) flatten(rec Recording, kids map[string]Recording, seen map[string]bool) {
	if seen[rec.Snapshot.ID] {
		return
	}
	seen[rec.Snapshot.ID] = true
	k := len(b.insts)
	b.insts = append(b.insts, rec)
	for _, en := range rec.History {
		b.events = append(b.events, event{inst: k, entry: en})
		if en.Time.After(b.end) {
			b.end = en.Time
		}
		if en.Kind == record.KindChild {
			if c, ok := kids[en.Detail]; ok {
				b.flatten(c, kids, seen)
			}
		}
	}
}

// input is the instance's input: the started entry's, or the snapshot's.
func (b *builder) input(root Recording) map[string]any {
	for _, en := range root.History {
		if en.Kind == record.KindStarted && en.Result != nil {
			return b.object(en.Result)
		}
	}
	if root.Snapshot.Input != nil {
		return b.object(root.Snapshot.Input)
	}
	return map[string]any{}
}

// runEnd is how one run ended, as its instance's history tells.
type runEnd struct {
	ran      *record.Entry // agent_run
	late     *record.Entry // late_reply
	selected *record.Entry // the user selected another agent
	handoff  *record.Entry // the hand-off of the delegate this run asked for
	returned bool          // the delegate's result went back to this run's agent
	gaveBack bool          // this run was a delegate's, and its result went back
	retried  bool          // a retry of this run was scheduled
	outcome  *record.Entry // the outcome matched right after this run
}

// replies scripts every run, in the order the runs were sent.
func (b *builder) replies(s *Scenario) {
	ends := make([]map[int]*runEnd, len(b.insts))
	for k, rec := range b.insts {
		ends[k] = endsOf(rec.History)
	}
	sent := make([]map[int]bool, len(b.insts))
	for k := range sent {
		sent[k] = map[int]bool{}
	}
	for _, ev := range b.events {
		en := ev.entry
		if en.Kind != record.KindDispatch && en.Kind != record.KindHandoff {
			continue
		}
		if sent[ev.inst][en.Step] {
			continue // sent again after a restart: one run
		}
		sent[ev.inst][en.Step] = true
		end := ends[ev.inst][en.Step]
		if end == nil {
			end = &runEnd{}
		}
		s.Agents[en.Agent] = append(s.Agents[en.Agent], b.reply(en, end))
	}
}

// endsOf indexes a history's run endings by step.
func endsOf(history []record.Entry) map[int]*runEnd {
	ends := map[int]*runEnd{}
	at := func(step int) *runEnd {
		if ends[step] == nil {
			ends[step] = &runEnd{}
		}
		return ends[step]
	}
	var last *runEnd // the run whose agent_run came last: an outcome right after is its
	for k := range history {
		en := &history[k]
		switch en.Kind {
		case record.KindAgentRun:
			e := at(en.Step)
			if e.ran == nil {
				e.ran = en
			}
			last = e
		case record.KindLateReply:
			if e := at(en.Step); e.late == nil {
				e.late = en
			}
		case record.KindSelected:
			at(en.Step).selected = en
		case record.KindRetry:
			at(en.Step).retried = true
		case record.KindReturned:
			at(en.Step).gaveBack = true
		case record.KindHandoff:
			// The delegate's hand-off comes right after the run that asked
			// for it; a refused one is followed by the outcome instead.
			if last != nil && last.ran.To == en.To && last.ran.Agent == en.From && last.ran.Error == "" {
				last.handoff = en
			}
			last = nil
		case record.KindOutcome:
			if last != nil && last.outcome == nil {
				last.outcome = en
			}
			last = nil
		case record.KindDispatch, record.KindJoined:
			last = nil
		}
	}
	for _, e := range ends {
		if e.handoff != nil {
			if d := ends[e.handoff.Step]; d != nil {
				e.returned = d.gaveBack
			}
		}
	}
	return ends
}

// reply is the scripted reply of the run sent by en.
func (b *builder) reply(en record.Entry, end *runEnd) Reply {
	delay := func(at time.Time) time.Duration { return max(at.Sub(en.Time), 0) }
	switch {
	case end.selected != nil:
		return Reply{Select: end.selected.To, Delay: delay(end.selected.Time), Retryable: true}
	case end.ran == nil || timedOut(end.ran):
		if end.late != nil {
			r := Reply{Trigger: end.late.Trigger, Result: b.object(end.late.Result), Retryable: true, Delay: delay(end.late.Time)}
			if end.late.Error != "" {
				r.Trigger, r.Result, r.Error = "", nil, b.ids.Replace(end.late.Error)
			}
			return r
		}
		// Never answered while the instance lived: the reply comes after
		// its end, whatever the replay's timing.
		return Reply{Error: unanswered, Retryable: true, Delay: delay(b.end) + time.Second}
	}
	ran := end.ran
	r := Reply{Retryable: true, Delay: delay(ran.Time), Usage: ran.Usage, Result: b.object(ran.Result)}
	switch {
	case ran.ErrorKind == "rejected":
		r.Result = nil
		r.Reject = cmp.Or(strings.TrimPrefix(strings.TrimPrefix(ran.Error, "registry: hand-off rejected"), ": "), "rejected")
	case ran.Error != "":
		r.Result = nil
		r.Error = b.ids.Replace(ran.Error)
		if ran.ErrorKind != "error" {
			r.Kind = ran.ErrorKind
		}
		switch {
		case end.retried:
		case end.outcome != nil && end.outcome.Trigger == "error":
			r.Retryable = end.outcome.Retryable
		default:
			// Not retried, as a final failure of a branch or an item:
			// not retryable gives the same path whatever the reason was.
			r.Retryable = false
		}
	case ran.To != "":
		r.Handoff = b.handoff(ran, end)
		if r.Handoff.Reason == "user_request" && r.Handoff.Explanation == "user selected "+ran.To && r.Handoff.Payload == nil && !r.Handoff.ReturnControl {
			r.Select, r.Handoff = ran.To, nil
		}
	default:
		r.Trigger = ran.Trigger
	}
	return r
}

// timedOut reports whether the engine ended the run on its timeout or
// heartbeat rather than the agent's reply.
func timedOut(ran *record.Entry) bool {
	return ran.ErrorKind == "timeout" || ran.ErrorKind == "heartbeat"
}

// handoff is the dynamic hand-off a run asked for: its target and reason
// from the agent_run entry, its explanation and payload from the hand-off
// that followed, return_control from the delegate's result going back.
func (b *builder) handoff(ran *record.Entry, end *runEnd) *Handoff {
	h := &Handoff{To: ran.To}
	if reason, ok := strings.CutPrefix(ran.Detail, "hand-off ("); ok {
		h.Reason = strings.TrimSuffix(reason, ")")
	}
	if ho := end.handoff; ho != nil {
		h.Reason = cmp.Or(ho.Reason, h.Reason)
		if ho.Detail != "delegated by "+ran.Agent {
			h.Explanation = b.ids.Replace(ho.Detail)
		}
		h.Payload = b.object(ho.Result)
		h.ReturnControl = end.returned
	}
	return h
}

// signals lists every signal an instance accepted, in the order accepted,
// each delayed from the start of its wait.
func (b *builder) signals(s *Scenario) {
	since := map[int]time.Time{}
	for _, ev := range b.events {
		en := ev.entry
		switch en.Kind {
		case record.KindWaiting:
			since[ev.inst] = en.Time
		case record.KindSignal:
			sig := Signal{Name: en.Trigger, Data: b.object(en.Result)}
			if start, ok := since[ev.inst]; ok {
				sig.Delay = max(en.Time.Sub(start), 0)
			}
			if sig.Data == nil {
				sig.Data = map[string]any{}
			}
			s.Signals = append(s.Signals, sig)
		}
	}
}

// object copies a recorded object, with the recorded root id replaced by
// the replay's in every string: ids reach results and the context through
// error messages and agents that echo them.
func (b *builder) object(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return b.value(m).(map[string]any)
}

func (b *builder) value(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = b.value(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for k, x := range t {
			out[k] = b.value(x)
		}
		return out
	case string:
		return b.ids.Replace(t)
	case json.Number:
		// A history read with UseNumber: YAML would write it as a string.
		if n, err := t.Int64(); err == nil {
			return n
		}
		if f, err := t.Float64(); err == nil {
			return f
		}
		return t.String()
	default:
		return v
	}
}
