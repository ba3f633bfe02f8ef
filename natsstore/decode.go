package natsstore

import (
	"bytes"
	"time"

	"github.com/batonhq/baton/internal/jsonv"
	"github.com/batonhq/baton/internal/usagejson"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// decodeStepDirect reads a step message in the form appendStep writes
// without reflection: the keys as it writes them, each once, null only
// for the maps it writes null. ok is false for anything else, which
// json.Unmarshal then reads (FuzzDecodeStepDirect holds the two equal).
// Every read of an instance decodes its last step, and reflection made it
// the costliest part of a read after the request itself.
func decodeStepDirect(data []byte) (r stepRecord, ok bool) {
	d := jsonv.NewDecoder(data)
	d.Fields(stepFields, func(i int) {
		switch i {
		case 0:
			r.Format = decodeInt(d)
		case 1:
			decodeSnapshot(d, &r.Snapshot)
		case 2:
			// Read into room for a step's usual few entries, then copy
			// at size: growing the slice entry by entry was a fifth of
			// the decode.
			var room [8]record.Entry
			entries := room[:0]
			d.Array(func() {
				entries = append(entries, record.Entry{})
				decodeEntry(d, &entries[len(entries)-1])
			})
			r.Entries = append(make([]record.Entry, 0, len(entries)), entries...)
		case 3:
			r.Outbox = []record.Outgoing{}
			d.Array(func() {
				r.Outbox = append(r.Outbox, record.Outgoing{})
				decodeOutgoing(d, &r.Outbox[len(r.Outbox)-1])
			})
		}
	})
	d.End()
	return r, d.OK()
}

// decodeSnapshotOf reads only the snapshot of a step message of instance
// id that this store encoded itself, passing over its entries and outbox:
// Finished answers a polling client with it, and the entries were half of
// a whole step's decoding. ok is false for anything decodeStep would not
// read the same.
func decodeSnapshotOf(id string, data []byte) (snap record.Snapshot, ok bool) {
	f := -1
	d := jsonv.NewDecoder(data)
	d.Fields(stepFields, func(i int) {
		switch i {
		case 0:
			f = decodeInt(d)
		case 1:
			decodeSnapshot(d, &snap)
		default:
			d.Raw()
		}
	})
	d.End()
	return snap, d.OK() && f == format && snap.ID == id
}

var (
	stepFields     = []string{"format", "snapshot", "entries", "outbox"}
	snapshotFields = []string{"id", "workflow", "version", "hash", "status", "state", "outcome", "error", "cancel_reason",
		"step", "attempt", "visits", "input", "context", "created", "updated", "commits", "usage"}
	entryFields = []string{"seq", "time", "kind", "step", "attempt", "state", "agent", "trigger", "rule", "priority",
		"condition", "from", "to", "next", "handoff_id", "result", "error", "retryable", "error_kind", "limit", "reason",
		"detail", "delay", "index", "usage"}
	outgoingFields = []string{"key", "kind", "run", "step", "attempt", "state", "to", "from", "handoff_id", "reason",
		"explanation", "task", "priority", "rule", "previous", "constraints", "payload", "delegator", "return_control",
		"returned", "index", "created"}
	ledgerFields = []string{"input_tokens", "output_tokens", "tokens", "cost", "agents", "visit"}
	totalsFields = []string{"input_tokens", "output_tokens", "tokens", "cost"}
)

func decodeInt(d *jsonv.Decoder) int {
	n := d.Int()
	if n != int64(int(n)) {
		d.Fail()
	}
	return int(n)
}

// decodeMap reads a map[string]any field that the encoder writes as null
// when nil.
func decodeMap(d *jsonv.Decoder) map[string]any {
	if d.Null() {
		return nil
	}
	return d.Map()
}

// decodeTime reads a time as time.Time's UnmarshalJSON does: the string's
// bytes as they are, unescaped (escapes fail here).
func decodeTime(d *jsonv.Decoder) time.Time {
	var t time.Time
	raw := d.Raw()
	if len(raw) < 2 || raw[0] != '"' || bytes.IndexByte(raw, '\\') >= 0 {
		d.Fail()
		return t
	}
	if err := t.UnmarshalText(raw[1 : len(raw)-1]); err != nil {
		d.Fail()
	}
	return t
}

func decodeSnapshot(d *jsonv.Decoder, s *record.Snapshot) {
	d.Fields(snapshotFields, func(i int) {
		switch i {
		case 0:
			s.ID = d.String()
		case 1:
			s.Workflow = d.String()
		case 2:
			s.Version = decodeInt(d)
		case 3:
			s.Hash = d.String()
		case 4:
			s.Status = record.Status(d.String())
		case 5:
			s.State = d.String()
		case 6:
			s.Outcome = d.String()
		case 7:
			s.Error = d.String()
		case 8:
			s.CancelReason = d.String()
		case 9:
			s.Step = decodeInt(d)
		case 10:
			s.Attempt = decodeInt(d)
		case 11:
			if d.Null() {
				return
			}
			s.Visits = map[string]int{}
			d.Object(func(k string) { s.Visits[k] = decodeInt(d) })
		case 12:
			s.Input = decodeMap(d)
		case 13:
			s.Context = decodeMap(d)
		case 14:
			s.Created = decodeTime(d)
		case 15:
			s.Updated = decodeTime(d)
		case 16:
			s.Commits = decodeInt(d)
		case 17:
			decodeLedger(d, &s.Usage)
		}
	})
}

func decodeTotals(d *jsonv.Decoder, t *registry.Totals) {
	d.Fields(totalsFields, func(i int) { decodeTotal(d, t, i) })
}

// decodeTotal reads field i of totalsFields (the first four of
// ledgerFields).
func decodeTotal(d *jsonv.Decoder, t *registry.Totals, i int) {
	switch i {
	case 0:
		t.InputTokens = d.Int()
	case 1:
		t.OutputTokens = d.Int()
	case 2:
		t.Tokens = d.Int()
	case 3:
		t.Cost = d.Float()
	}
}

func decodeLedger(d *jsonv.Decoder, l *registry.Ledger) {
	d.Fields(ledgerFields, func(i int) {
		switch i {
		case 4:
			// As AgentTotals.UnmarshalJSON reads them: sorted by agent
			// (an object written by appendStep already is).
			l.Agents = registry.AgentTotals{}
			d.Object(func(agent string) {
				if n := len(l.Agents); n > 0 && l.Agents[n-1].Agent >= agent {
					d.Fail()
					return
				}
				l.Agents = append(l.Agents, registry.AgentTotal{Agent: agent})
				decodeTotals(d, &l.Agents[len(l.Agents)-1].Totals)
			})
		case 5:
			decodeTotals(d, &l.Visit)
		default:
			decodeTotal(d, &l.Totals, i)
		}
	})
}

func decodeEntry(d *jsonv.Decoder, en *record.Entry) {
	d.Fields(entryFields, func(i int) {
		switch i {
		case 0:
			en.Seq = decodeInt(d)
		case 1:
			en.Time = decodeTime(d)
		case 2:
			en.Kind = record.Kind(d.String())
		case 3:
			en.Step = decodeInt(d)
		case 4:
			en.Attempt = decodeInt(d)
		case 5:
			en.State = d.String()
		case 6:
			en.Agent = d.String()
		case 7:
			en.Trigger = d.String()
		case 8:
			en.Rule = d.String()
		case 9:
			en.Priority = decodeInt(d)
		case 10:
			en.Condition = d.String()
		case 11:
			en.From = d.String()
		case 12:
			en.To = d.String()
		case 13:
			en.Next = d.String()
		case 14:
			en.HandoffID = d.String()
		case 15:
			en.Result = d.Map()
		case 16:
			en.Error = d.String()
		case 17:
			en.Retryable = d.Bool()
		case 18:
			en.ErrorKind = d.String()
		case 19:
			en.Limit = d.String()
		case 20:
			en.Reason = d.String()
		case 21:
			en.Detail = d.String()
		case 22:
			en.Delay = time.Duration(d.Int())
		case 23:
			en.Index = decodeInt(d)
		case 24:
			en.Usage = usagejson.Decode(d)
		}
	})
}

func decodeOutgoing(d *jsonv.Decoder, o *record.Outgoing) {
	d.Fields(outgoingFields, func(i int) {
		switch i {
		case 0:
			o.Key = d.String()
		case 1:
			o.Kind = record.OutgoingKind(d.String())
		case 2:
			o.Run = d.String()
		case 3:
			o.Step = decodeInt(d)
		case 4:
			o.Attempt = decodeInt(d)
		case 5:
			o.State = d.String()
		case 6:
			o.To = d.String()
		case 7:
			o.From = d.String()
		case 8:
			o.HandoffID = d.String()
		case 9:
			o.Reason = d.String()
		case 10:
			o.Explanation = d.String()
		case 11:
			o.Task = d.String()
		case 12:
			o.Priority = decodeInt(d)
		case 13:
			o.Rule = d.String()
		case 14:
			o.Previous = d.Map()
		case 15:
			o.Constraints = d.Map()
		case 16:
			o.Payload = d.Map()
		case 17:
			o.Delegator = d.String()
		case 18:
			o.ReturnControl = d.Bool()
		case 19:
			o.Returned = d.Bool()
		case 20:
			o.Index = decodeInt(d)
		case 21:
			o.Created = decodeTime(d)
		}
	})
}
