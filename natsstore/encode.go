package natsstore

import (
	"slices"
	"strconv"
	"time"

	"github.com/batonhq/baton/internal/jsonv"
	"github.com/batonhq/baton/internal/usagejson"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// appendStep appends the message of a step as json.Marshal writes the
// stepRecord of the same values, without reflection: every commit encodes
// one, and reflection made it half of natsstore's CPU in a commit
// (FuzzAppendStep holds the two equal). ok is false when it meets what
// only json.Marshal decides (a value with no JSON form, a time outside
// RFC 3339, agents' totals out of order): the caller then encodes with
// json.Marshal, which words the error.
func appendStep(b []byte, snap record.Snapshot, entries []record.Entry, outbox []record.Outgoing) ([]byte, bool) {
	e := stepEncoder{b: b}
	e.raw(`{"format":`)
	e.int(format)
	e.raw(`,"snapshot":`)
	e.snapshot(&snap)
	if len(entries) > 0 {
		e.raw(`,"entries":[`)
		for i := range entries {
			if i > 0 {
				e.raw(",")
			}
			e.entry(&entries[i])
		}
		e.raw("]")
	}
	if len(outbox) > 0 {
		e.raw(`,"outbox":[`)
		for i := range outbox {
			if i > 0 {
				e.raw(",")
			}
			e.outgoing(&outbox[i])
		}
		e.raw("]")
	}
	e.raw("}")
	return e.b, e.ok()
}

// stepEncoder writes one step message; bad is set at the first value it
// leaves to json.Marshal.
type stepEncoder struct {
	b   []byte
	bad bool
}

func (e *stepEncoder) ok() bool { return !e.bad }

func (e *stepEncoder) raw(s string) { e.b = append(e.b, s...) }

func (e *stepEncoder) int(n int) { e.b = strconv.AppendInt(e.b, int64(n), 10) }

func (e *stepEncoder) str(s string) { e.b = jsonv.AppendString(e.b, s) }

// key writes `,"name":` (the first field of an object writes its own).
func (e *stepEncoder) key(name string) {
	e.b = append(e.b, ',', '"')
	e.b = append(e.b, name...)
	e.b = append(e.b, '"', ':')
}

// optStr and optInt write a field tagged omitempty.
func (e *stepEncoder) optStr(name, s string) {
	if s != "" {
		e.key(name)
		e.str(s)
	}
}

func (e *stepEncoder) optInt(name string, n int) {
	if n != 0 {
		e.key(name)
		e.int(n)
	}
}

func (e *stepEncoder) optBool(name string, v bool) {
	if v {
		e.key(name)
		e.raw("true")
	}
}

func (e *stepEncoder) float(f float64) {
	var ok bool
	if e.b, ok = jsonv.AppendFloat(e.b, f); !ok {
		e.bad = true
	}
}

func (e *stepEncoder) time(t time.Time) {
	e.b = append(e.b, '"')
	b, err := t.AppendText(e.b)
	if err != nil {
		e.bad = true
		return
	}
	e.b = append(b, '"')
}

// anyMap writes a map[string]any field, nil as null.
func (e *stepEncoder) anyMap(m map[string]any) {
	var err error
	if e.b, err = jsonv.Append(e.b, m); err != nil {
		e.bad = true
	}
}

func (e *stepEncoder) optMap(name string, m map[string]any) {
	if len(m) > 0 {
		e.key(name)
		e.anyMap(m)
	}
}

func (e *stepEncoder) snapshot(s *record.Snapshot) {
	e.raw(`{"id":`)
	e.str(s.ID)
	e.key("workflow")
	e.str(s.Workflow)
	e.key("version")
	e.int(s.Version)
	e.key("hash")
	e.str(s.Hash)
	e.key("status")
	e.str(string(s.Status))
	e.key("state")
	e.str(s.State)
	e.optStr("outcome", s.Outcome)
	e.optStr("error", s.Error)
	e.optStr("cancel_reason", s.CancelReason)
	e.key("step")
	e.int(s.Step)
	e.key("attempt")
	e.int(s.Attempt)
	e.key("visits")
	e.visits(s.Visits)
	e.key("input")
	e.anyMap(s.Input)
	e.key("context")
	e.anyMap(s.Context)
	e.key("created")
	e.time(s.Created)
	e.key("updated")
	e.time(s.Updated)
	e.key("commits")
	e.int(s.Commits)
	if !ledgerZero(&s.Usage) {
		e.key("usage")
		e.ledger(&s.Usage)
	}
	e.raw("}")
}

// visits writes a map[string]int, its keys sorted as json.Marshal sorts
// them.
func (e *stepEncoder) visits(m map[string]int) {
	if m == nil {
		e.raw("null")
		return
	}
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.raw("{")
	for i, k := range keys {
		if i > 0 {
			e.raw(",")
		}
		e.str(k)
		e.raw(":")
		e.int(m[k])
	}
	e.raw("}")
}

// ledgerZero is omitzero's test for a registry.Ledger, which has no IsZero
// method: reflect's, for which a cost of -0 is zero and an empty non-nil
// slice is not.
func ledgerZero(l *registry.Ledger) bool {
	return totalsZero(l.Totals) && l.Agents == nil && totalsZero(l.Visit)
}

func totalsZero(t registry.Totals) bool {
	return t.InputTokens == 0 && t.OutputTokens == 0 && t.Tokens == 0 && t.Cost == 0
}

func (e *stepEncoder) totalsFields(t registry.Totals) {
	e.raw(`"input_tokens":`)
	e.b = strconv.AppendInt(e.b, t.InputTokens, 10)
	e.key("output_tokens")
	e.b = strconv.AppendInt(e.b, t.OutputTokens, 10)
	e.key("tokens")
	e.b = strconv.AppendInt(e.b, t.Tokens, 10)
	e.key("cost")
	e.float(t.Cost)
}

func (e *stepEncoder) ledger(l *registry.Ledger) {
	e.raw("{")
	e.totalsFields(l.Totals)
	if len(l.Agents) > 0 {
		// AgentTotals writes an object through a map: its keys sorted,
		// one per agent. Totals out of order or twice are left to it.
		e.key("agents")
		e.raw("{")
		for i, a := range l.Agents {
			if i > 0 {
				if l.Agents[i-1].Agent >= a.Agent {
					e.bad = true
					return
				}
				e.raw(",")
			}
			e.str(a.Agent)
			e.raw(":{")
			e.totalsFields(a.Totals)
			e.raw("}")
		}
		e.raw("}")
	}
	if !totalsZero(l.Visit) {
		e.key("visit")
		e.raw("{")
		e.totalsFields(l.Visit)
		e.raw("}")
	}
	e.raw("}")
}

func (e *stepEncoder) entry(en *record.Entry) {
	e.raw(`{"seq":`)
	e.int(en.Seq)
	e.key("time")
	e.time(en.Time)
	e.key("kind")
	e.str(string(en.Kind))
	e.optInt("step", en.Step)
	e.optInt("attempt", en.Attempt)
	e.optStr("state", en.State)
	e.optStr("agent", en.Agent)
	e.optStr("trigger", en.Trigger)
	e.optStr("rule", en.Rule)
	e.optInt("priority", en.Priority)
	e.optStr("condition", en.Condition)
	e.optStr("from", en.From)
	e.optStr("to", en.To)
	e.optStr("next", en.Next)
	e.optStr("handoff_id", en.HandoffID)
	e.optMap("result", en.Result)
	e.optStr("error", en.Error)
	e.optBool("retryable", en.Retryable)
	e.optStr("error_kind", en.ErrorKind)
	e.optStr("limit", en.Limit)
	e.optStr("reason", en.Reason)
	e.optStr("detail", en.Detail)
	if en.Delay != 0 {
		e.key("delay")
		e.b = strconv.AppendInt(e.b, int64(en.Delay), 10)
	}
	e.optInt("index", en.Index)
	if u := en.Usage; !u.IsZero() {
		e.key("usage")
		var ok bool
		if e.b, ok = usagejson.Append(e.b, u); !ok {
			e.bad = true
		}
	}
	e.raw("}")
}

func (e *stepEncoder) outgoing(o *record.Outgoing) {
	e.raw(`{"key":`)
	e.str(o.Key)
	e.key("kind")
	e.str(string(o.Kind))
	e.optStr("run", o.Run)
	e.key("step")
	e.int(o.Step)
	e.optInt("attempt", o.Attempt)
	e.key("state")
	e.str(o.State)
	e.key("to")
	e.str(o.To)
	e.optStr("from", o.From)
	e.optStr("handoff_id", o.HandoffID)
	e.optStr("reason", o.Reason)
	e.optStr("explanation", o.Explanation)
	e.optStr("task", o.Task)
	e.optInt("priority", o.Priority)
	e.optStr("rule", o.Rule)
	e.optMap("previous", o.Previous)
	e.optMap("constraints", o.Constraints)
	e.optMap("payload", o.Payload)
	e.optStr("delegator", o.Delegator)
	e.optBool("return_control", o.ReturnControl)
	e.optBool("returned", o.Returned)
	e.optInt("index", o.Index)
	e.key("created")
	e.time(o.Created)
	e.raw("}")
}

// stepSizeHint is the room a step message starts with: a step of a
// four-step workflow's instance takes about 1.5 KB.
const stepSizeHint = 2048
