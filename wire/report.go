package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/jsonvalue"
	"github.com/batonhq/baton/registry"
)

// MaxReport is the largest report, in bytes, DecodeReport reads.
const MaxReport = 1 << 20

// Report is what an agent sends when a run ends (or, with Heartbeat or
// Progress, while it works). Exactly one of Trigger, Error, Reject and
// Handoff is set, unless Heartbeat or Progress is. Usage, what the run
// used, goes with the report that ends the run.
type Report struct {
	InstanceID string             `json:"instance_id"`
	Step       int                `json:"step"`
	Agent      string             `json:"agent"`
	Trigger    string             `json:"trigger,omitempty"`
	Result     map[string]any     `json:"result,omitempty"`
	Error      *Failure           `json:"error,omitempty"`
	Reject     *string            `json:"reject,omitempty"`
	Handoff    *Handoff           `json:"handoff,omitempty"`
	Heartbeat  bool               `json:"heartbeat,omitempty"`
	Usage      registry.Usage     `json:"usage,omitzero"`
	Progress   *registry.Progress `json:"progress,omitempty"`
}

// Failure is a failed run: its message, whether a retry may help, and its
// kind (rate_limited, say; "error" when none is given).
type Failure struct {
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
	Kind      string `json:"kind,omitempty"`
}

// Handoff is a dynamic hand-off an agent asks for instead of an outcome.
type Handoff struct {
	To            string         `json:"to"`
	Reason        string         `json:"reason,omitempty"`
	Explanation   string         `json:"explanation,omitempty"`
	Task          string         `json:"task,omitempty"`
	Payload       map[string]any `json:"payload,omitempty"`
	ReturnControl bool           `json:"return_control,omitempty"`
}

// Answer is the engine's answer to a report.
type Answer struct {
	OK      bool   `json:"ok"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// DecodeReport reads one report from JSON. Unknown fields, a missing
// identity, none or more than one of trigger, error, reject and handoff,
// progress beside any of them, negative or non-numeric usage, invalid
// UTF-8 or more than MaxReport bytes are a *FieldError naming the field.
func DecodeReport(data []byte) (Report, error) {
	if err := checkReportBytes(data); err != nil {
		return Report{}, err
	}
	if r, ok := decodeReportDirect(data); ok {
		return r, r.Validate()
	}
	return decodeReportReflect(data)
}

// checkReportBytes refuses what is too large or not UTF-8.
func checkReportBytes(data []byte) error {
	if len(data) > MaxReport {
		return fieldError("report", "is larger than "+strconv.Itoa(MaxReport)+" bytes")
	}
	if !utf8.Valid(data) {
		return fieldError("report", "is not valid UTF-8")
	}
	return nil
}

// decodeReportReflect is DecodeReport by encoding/json, which reads what
// the direct decoder leaves to it and words the errors.
func decodeReportReflect(data []byte) (Report, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Report{}, fieldError(te.Field, "must be "+jsonType(te.Type.Kind().String()))
		}
		// encoding/json has no error type for an unknown field, only its
		// text, which names the key but not the object holding it.
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			if field, qerr := strconv.Unquote(name); qerr == nil && field != "" {
				return Report{}, fieldError(field, "is unknown")
			}
		}
		return Report{}, fieldError("report", "is not a JSON report: "+err.Error())
	}
	// More would let a stray "}" or "]" through: it only looks for the
	// start of another value.
	if _, err := dec.Token(); err != io.EOF {
		return Report{}, fieldError("report", "has data after the report")
	}
	return r, r.Validate()
}

func jsonType(kind string) string {
	switch kind {
	case "int", "int64":
		return "an integer"
	case "map", "struct", "ptr":
		return "an object"
	case "bool":
		return "a boolean"
	case "float64", "float32":
		return "a finite number"
	}
	return "a " + kind
}

// Validate checks the report's identity and that it says exactly one thing.
func (r *Report) Validate() error {
	switch {
	case r.InstanceID == "":
		return fieldError("instance_id", "is required")
	case r.Step < 1:
		return fieldError("step", "must be 1 or more")
	case r.Agent == "":
		return fieldError("agent", "is required")
	}
	n := 0
	for _, set := range []bool{r.Trigger != "", r.Error != nil, r.Reject != nil, r.Handoff != nil} {
		if set {
			n++
		}
	}
	if err := r.Usage.Validate(); err != nil {
		var ue *registry.UsageError
		if errors.As(err, &ue) {
			return fieldError("usage."+ue.Field, ue.Reason)
		}
		return fieldError("usage", err.Error())
	}
	switch {
	case r.Progress != nil && (n > 0 || r.Result != nil || r.Heartbeat):
		return fieldError("progress", "must come without trigger, result, error, reject, handoff or heartbeat: progress does not end the run")
	case (r.Progress != nil || r.Heartbeat) && !r.Usage.IsZero():
		return fieldError("usage", "goes with the report that ends the run, not with progress or a heartbeat")
	case r.Progress != nil:
		return nil
	case r.Heartbeat && (n > 0 || r.Result != nil):
		return fieldError("heartbeat", "must come alone, without trigger, result, error, reject or handoff")
	case r.Heartbeat:
		return nil
	case n == 0:
		return fieldError("report", "needs one of trigger, error, reject, handoff, heartbeat or progress")
	case n > 1:
		return fieldError("report", "has more than one of trigger, error, reject and handoff")
	case r.Error != nil && r.Error.Message == "":
		return fieldError("error.message", "is required")
	case r.Handoff != nil && r.Handoff.To == "":
		return fieldError("handoff.to", "is required")
	case r.Result != nil && r.Trigger == "" && r.Handoff == nil:
		return fieldError("result", "goes with trigger or handoff")
	}
	return nil
}

// Ending validates a report that ends its run and returns how the run
// ended, in one call: Validate, then the data the report carries (its
// result and a hand-off's payload) checked, once each, as JSON values every
// store and transport can keep (finite numbers, valid UTF-8, nesting at
// most jsonvalue.MaxDepth deep, at most MaxReport bytes), then Outcome. A
// report the protocol refuses is err, a *FieldError naming the field; runErr
// is the failure the agent reported, nil when out is its outcome. A
// heartbeat or progress report ends nothing: err is its validation's.
func (r *Report) Ending() (out registry.Outcome, runErr, err error) {
	if err := r.Validate(); err != nil {
		return registry.Outcome{}, nil, err
	}
	if r.Heartbeat || r.Progress != nil {
		return registry.Outcome{}, nil, nil
	}
	if bad := jsonvalue.Check(r.Result, MaxReport); bad != nil {
		return registry.Outcome{}, nil, fieldError("result"+bad.Field, bad.Reason)
	}
	if r.Handoff != nil {
		if bad := jsonvalue.Check(r.Handoff.Payload, MaxReport); bad != nil {
			return registry.Outcome{}, nil, fieldError("handoff.payload"+bad.Field, bad.Reason)
		}
	}
	out, runErr = r.Outcome()
	return out, runErr, nil
}

// Outcome turns the report into what the engine takes from a Go handler:
// the outcome, or the error that failed the run (a rejection, a permanent
// failure, a failure of some kind); the outcome carries the run's usage
// in every case, since a failed run's usage counts too.
func (r *Report) Outcome() (registry.Outcome, error) {
	switch {
	case r.Error != nil:
		var err error = &reportedError{msg: r.Error.Message}
		if r.Error.Kind != "" {
			err = registry.Kind(err, r.Error.Kind)
		}
		if !r.Error.Retryable {
			err = registry.Permanent(err)
		}
		return registry.Outcome{Usage: r.Usage}, err
	case r.Reject != nil:
		return registry.Outcome{Usage: r.Usage}, registry.Reject(*r.Reject)
	case r.Handoff != nil:
		h := r.Handoff
		return registry.Outcome{Result: r.Result, Usage: r.Usage, Handoff: &registry.Delegation{
			To: h.To, Reason: h.Reason, Explanation: h.Explanation, Task: h.Task,
			Payload: h.Payload, ReturnControl: h.ReturnControl,
		}}, nil
	}
	return registry.Outcome{Trigger: r.Trigger, Result: r.Result, Usage: r.Usage}, nil
}

// reportedError is an agent's failure as it reported it.
type reportedError struct{ msg string }

func (e *reportedError) Error() string { return e.msg }

// ReportOf is the report of a run of t that ended with out, or with runErr
// when that is not nil: the inverse of Report.Outcome.
func ReportOf(t *registry.Task, out registry.Outcome, runErr error) Report {
	r := Report{InstanceID: t.InstanceID, Step: t.Step, Agent: t.Agent, Usage: out.Usage}
	reason, rejected := rejectReason(runErr)
	switch {
	case rejected:
		kept := reason // made on the heap only here
		r.Reject = &kept
	case runErr != nil:
		r.Error = &Failure{Message: runErr.Error(), Retryable: registry.IsRetryable(runErr)}
		if k := registry.KindOf(runErr); k != "error" {
			r.Error.Kind = k
		}
	case out.Handoff != nil:
		d := out.Handoff
		r.Result = out.Result
		r.Handoff = &Handoff{To: d.To, Reason: d.Reason, Explanation: d.Explanation, Task: d.Task, Payload: d.Payload, ReturnControl: d.ReturnControl}
	default:
		r.Trigger, r.Result = out.Trigger, out.Result
	}
	return r
}

// rejectReason is the reason of err's registry.RejectError, if it holds
// one. The target of errors.As is made only for an error: made in
// ReportOf, it was on the heap for every run.
func rejectReason(err error) (reason string, ok bool) {
	if err == nil {
		return "", false
	}
	var reject *registry.RejectError
	if errors.As(err, &reject) {
		return reject.Reason, true
	}
	return "", false
}
