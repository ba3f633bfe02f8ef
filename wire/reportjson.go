package wire

import (
	"encoding/json"
	"strconv"

	"github.com/batonhq/baton/internal/jsonv"
	"github.com/batonhq/baton/internal/usagejson"
	"github.com/batonhq/baton/registry"
)

// EncodeReport returns r's JSON, the bytes json.Marshal(r) writes, written
// directly: a report goes out on every step. A report JSON cannot hold (a
// cost that is not a finite number, a value of a type JSON has no form
// for) is left to json.Marshal, whose error it returns.
func EncodeReport(r *Report) ([]byte, error) {
	return AppendReport(make([]byte, 0, 256), r)
}

// AppendReport appends r's JSON, as EncodeReport writes it, to b: a
// caller that sends the bytes at once can write every report into one
// buffer.
func AppendReport(b []byte, r *Report) ([]byte, error) {
	out, ok := appendReport(b, r)
	if !ok {
		// A copy goes to encoding/json, so that r does not escape: the
		// callers' reports stay on their stacks.
		c := *r
		data, err := json.Marshal(&c)
		if err != nil {
			return b, err
		}
		return append(b, data...), nil
	}
	return out, nil
}

func appendReport(b []byte, r *Report) ([]byte, bool) {
	var err error
	b = append(b, `{"instance_id":`...)
	b = jsonv.AppendString(b, r.InstanceID)
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(r.Step), 10)
	b = append(b, `,"agent":`...)
	b = jsonv.AppendString(b, r.Agent)
	if r.Trigger != "" {
		b = append(b, `,"trigger":`...)
		b = jsonv.AppendString(b, r.Trigger)
	}
	if len(r.Result) > 0 {
		b = append(b, `,"result":`...)
		if b, err = jsonv.Append(b, r.Result); err != nil {
			return b, false
		}
	}
	if e := r.Error; e != nil {
		b = append(b, `,"error":{"message":`...)
		b = jsonv.AppendString(b, e.Message)
		b = append(b, `,"retryable":`...)
		b = strconv.AppendBool(b, e.Retryable)
		if e.Kind != "" {
			b = append(b, `,"kind":`...)
			b = jsonv.AppendString(b, e.Kind)
		}
		b = append(b, '}')
	}
	if r.Reject != nil {
		b = append(b, `,"reject":`...)
		b = jsonv.AppendString(b, *r.Reject)
	}
	if h := r.Handoff; h != nil {
		b = append(b, `,"handoff":{"to":`...)
		b = jsonv.AppendString(b, h.To)
		b = appendOmitted(b, `,"reason":`, h.Reason)
		b = appendOmitted(b, `,"explanation":`, h.Explanation)
		b = appendOmitted(b, `,"task":`, h.Task)
		if len(h.Payload) > 0 {
			b = append(b, `,"payload":`...)
			if b, err = jsonv.Append(b, h.Payload); err != nil {
				return b, false
			}
		}
		if h.ReturnControl {
			b = append(b, `,"return_control":true`...)
		}
		b = append(b, '}')
	}
	if r.Heartbeat {
		b = append(b, `,"heartbeat":true`...)
	}
	if !r.Usage.IsZero() {
		var ok bool
		b = append(b, `,"usage":`...)
		if b, ok = usagejson.Append(b, r.Usage); !ok {
			return b, false
		}
	}
	if p := r.Progress; p != nil {
		b = append(b, `,"progress":{`...)
		n := len(b)
		b = appendOmitted(b, `,"message":`, p.Message)
		b = appendOmitted(b, `,"delta":`, p.Delta)
		if len(p.Data) > 0 {
			b = append(b, `,"data":`...)
			if b, err = jsonv.Append(b, p.Data); err != nil {
				return b, false
			}
		}
		if len(b) > n {
			b = append(b[:n], b[n+1:]...) // the first field's comma
		}
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// appendOmitted writes key and s unless s is empty (omitempty).
func appendOmitted(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, key...)
	return jsonv.AppendString(b, s)
}

// decodeReportDirect reads a report in the regular form without
// reflection: the keys as EncodeReport writes them, each once, no nulls.
// ok is false for anything else, which encoding/json then reads.
func decodeReportDirect(data []byte) (r Report, ok bool) {
	d := jsonv.NewDecoder(data)
	var seen uint32
	once := func(bit uint32) {
		if seen&bit != 0 {
			d.Fail()
		}
		seen |= bit
	}
	d.Object(func(key string) {
		switch key {
		case "instance_id":
			once(1 << 0)
			r.InstanceID = d.String()
		case "step":
			once(1 << 1)
			n := d.Int()
			if n != int64(int(n)) {
				d.Fail()
			}
			r.Step = int(n)
		case "agent":
			once(1 << 2)
			r.Agent = d.String()
		case "trigger":
			once(1 << 3)
			r.Trigger = d.String()
		case "result":
			once(1 << 4)
			r.Result = d.Map()
		case "error":
			once(1 << 5)
			r.Error = decodeFailure(d)
		case "reject":
			once(1 << 6)
			s := d.String()
			r.Reject = &s
		case "handoff":
			once(1 << 7)
			r.Handoff = decodeHandoff(d)
		case "heartbeat":
			once(1 << 8)
			r.Heartbeat = d.Bool()
		case "usage":
			once(1 << 9)
			r.Usage = usagejson.Decode(d)
		case "progress":
			once(1 << 10)
			r.Progress = decodeProgress(d)
		default:
			d.Fail()
		}
	})
	d.End()
	return r, d.OK()
}

var (
	failureFields  = []string{"message", "retryable", "kind"}
	handoffFields  = []string{"to", "reason", "explanation", "task", "payload", "return_control"}
	progressFields = []string{"message", "delta", "data"}
)

func decodeFailure(d *jsonv.Decoder) *Failure {
	f := &Failure{}
	d.Fields(failureFields, func(i int) {
		switch i {
		case 0:
			f.Message = d.String()
		case 1:
			f.Retryable = d.Bool()
		case 2:
			f.Kind = d.String()
		}
	})
	return f
}

func decodeHandoff(d *jsonv.Decoder) *Handoff {
	h := &Handoff{}
	d.Fields(handoffFields, func(i int) {
		switch i {
		case 0:
			h.To = d.String()
		case 1:
			h.Reason = d.String()
		case 2:
			h.Explanation = d.String()
		case 3:
			h.Task = d.String()
		case 4:
			h.Payload = d.Map()
		case 5:
			h.ReturnControl = d.Bool()
		}
	})
	return h
}

func decodeProgress(d *jsonv.Decoder) *registry.Progress {
	p := &registry.Progress{}
	d.Fields(progressFields, func(i int) {
		switch i {
		case 0:
			p.Message = d.String()
		case 1:
			p.Delta = d.String()
		case 2:
			p.Data = d.Map()
		}
	})
	return p
}

// EncodeAnswer returns a's JSON, the bytes json.Marshal(a) writes.
func EncodeAnswer(a Answer) []byte {
	b := append(make([]byte, 0, 64), `{"ok":`...)
	b = strconv.AppendBool(b, a.OK)
	b = appendOmitted(b, `,"code":`, a.Code)
	b = appendOmitted(b, `,"message":`, a.Message)
	return append(b, '}')
}

// DecodeAnswer reads an answer as json.Unmarshal reads one into an Answer.
func DecodeAnswer(data []byte) (Answer, error) {
	var a Answer
	d := jsonv.NewDecoder(data)
	d.Fields([]string{"ok", "code", "message"}, func(i int) {
		switch i {
		case 0:
			a.OK = d.Bool()
		case 1:
			a.Code = d.String()
		case 2:
			a.Message = d.String()
		}
	})
	d.End()
	if d.OK() {
		return a, nil
	}
	// Another variable: a, taken by encoding/json, would be made on the
	// heap for every answer.
	var slow Answer
	err := json.Unmarshal(data, &slow)
	return slow, err
}
