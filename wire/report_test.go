package wire_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/wire"
)

const id = `"instance_id":"inst-42","step":3,"agent":"seller"`

func ptr[T any](v T) *T { return &v }

func TestDecodeReport(t *testing.T) {
	ident := wire.Report{InstanceID: "inst-42", Step: 3, Agent: "seller"}
	with := func(edit func(r *wire.Report)) wire.Report {
		r := ident
		edit(&r)
		return r
	}
	tests := []struct {
		name string
		in   string
		want wire.Report
	}{
		{"trigger and result", `{` + id + `,"trigger":"reviewed","result":{"approval":"APPROVED"}}`,
			with(func(r *wire.Report) {
				r.Trigger, r.Result = "reviewed", map[string]any{"approval": "APPROVED"}
			})},
		{"trigger alone", `{` + id + `,"trigger":"reviewed"}`,
			with(func(r *wire.Report) { r.Trigger = "reviewed" })},
		{"error", `{` + id + `,"error":{"message":"rate limited","retryable":true,"kind":"rate_limited"}}`,
			with(func(r *wire.Report) {
				r.Error = &wire.Failure{Message: "rate limited", Retryable: true, Kind: "rate_limited"}
			})},
		{"error with a message only", `{` + id + `,"error":{"message":"bad order"}}`,
			with(func(r *wire.Report) { r.Error = &wire.Failure{Message: "bad order"} })},
		{"reject", `{` + id + `,"reject":"queue busy"}`,
			with(func(r *wire.Report) { r.Reject = ptr("queue busy") })},
		{"reject without a reason", `{` + id + `,"reject":""}`,
			with(func(r *wire.Report) { r.Reject = ptr("") })},
		{"handoff", `{` + id + `,"handoff":{"to":"rag","reason":"capability_match","task":"find the policy","payload":{},"return_control":true}}`,
			with(func(r *wire.Report) {
				r.Handoff = &wire.Handoff{To: "rag", Reason: "capability_match", Task: "find the policy", Payload: map[string]any{}, ReturnControl: true}
			})},
		{"handoff with words and a result", `{` + id + `,"result":{"draft":1},"handoff":{"to":"rag","explanation":"needs the policy"}}`,
			with(func(r *wire.Report) {
				r.Result = map[string]any{"draft": 1.0}
				r.Handoff = &wire.Handoff{To: "rag", Explanation: "needs the policy"}
			})},
		{"heartbeat", `{` + id + `,"heartbeat":true}`,
			with(func(r *wire.Report) { r.Heartbeat = true })},
		{"null members", `{` + id + `,"trigger":"done","error":null,"reject":null,"handoff":null,"result":null}`,
			with(func(r *wire.Report) { r.Trigger = "done" })},
		{"white space around", " \n\t{" + id + `,"trigger":"done"}` + "\r\n ",
			with(func(r *wire.Report) { r.Trigger = "done" })},
		{"exactly MaxReport bytes", padTo(`{`+id+`,"trigger":"done"}`, wire.MaxReport),
			with(func(r *wire.Report) { r.Trigger = "done" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.DecodeReport([]byte(tt.in))
			if err != nil {
				t.Fatalf("DecodeReport: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %s, want %s", asJSON(got), asJSON(tt.want))
			}
		})
	}
}

// padTo pads the JSON value s with trailing spaces to n bytes.
func padTo(s string, n int) string { return s + strings.Repeat(" ", n-len(s)) }

func TestDecodeReport_Errors(t *testing.T) {
	tests := []struct {
		name, in, field string
	}{
		{"unknown field", `{` + id + `,"trigger":"done","triger":"done"}`, "triger"},
		// encoding/json names the unknown key, not its path (error.code).
		{"unknown field in error", `{` + id + `,"error":{"message":"x","code":429}}`, "code"},
		{"unknown field in handoff", `{` + id + `,"handoff":{"to":"rag","target":"rag"}}`, "target"},
		{"unknown empty field", `{` + id + `,"trigger":"done","":1}`, "report"},
		{"missing instance_id", `{"step":3,"agent":"seller","trigger":"done"}`, "instance_id"},
		{"empty instance_id", `{"instance_id":"","step":3,"agent":"seller","trigger":"done"}`, "instance_id"},
		{"missing step", `{"instance_id":"inst-42","agent":"seller","trigger":"done"}`, "step"},
		{"step 0", `{"instance_id":"inst-42","step":0,"agent":"seller","trigger":"done"}`, "step"},
		{"step negative", `{"instance_id":"inst-42","step":-1,"agent":"seller","trigger":"done"}`, "step"},
		{"missing agent", `{"instance_id":"inst-42","step":3,"trigger":"done"}`, "agent"},
		{"none of trigger, error, reject, handoff", `{` + id + `}`, "report"},
		{"empty trigger", `{` + id + `,"trigger":""}`, "report"},
		{"trigger and reject", `{` + id + `,"trigger":"done","reject":"busy"}`, "report"},
		{"error and handoff", `{` + id + `,"error":{"message":"x"},"handoff":{"to":"rag"}}`, "report"},
		{"all four", `{` + id + `,"trigger":"done","error":{"message":"x"},"reject":"busy","handoff":{"to":"rag"}}`, "report"},
		{"heartbeat with a trigger", `{` + id + `,"heartbeat":true,"trigger":"done"}`, "heartbeat"},
		{"heartbeat with a reject", `{` + id + `,"heartbeat":true,"reject":"busy"}`, "heartbeat"},
		{"heartbeat with a result", `{` + id + `,"heartbeat":true,"result":{"partial":1}}`, "heartbeat"},
		{"error without message", `{` + id + `,"error":{"retryable":true}}`, "error.message"},
		{"error with an empty message", `{` + id + `,"error":{"message":""}}`, "error.message"},
		{"handoff without to", `{` + id + `,"handoff":{"reason":"capability_match"}}`, "handoff.to"},
		{"result without trigger", `{` + id + `,"reject":"busy","result":{"x":1}}`, "result"},
		{"result with an error", `{` + id + `,"error":{"message":"x"},"result":{"x":1}}`, "result"},
		{"instance_id a number", `{"instance_id":42,"step":3,"agent":"seller","trigger":"done"}`, "instance_id"},
		{"step a string", `{"instance_id":"inst-42","step":"3","agent":"seller","trigger":"done"}`, "step"},
		{"step fractional", `{"instance_id":"inst-42","step":3.5,"agent":"seller","trigger":"done"}`, "step"},
		{"step too large", `{"instance_id":"inst-42","step":1e30,"agent":"seller","trigger":"done"}`, "step"},
		{"trigger a number", `{` + id + `,"trigger":1}`, "trigger"},
		{"result an array", `{` + id + `,"trigger":"done","result":[1]}`, "result"},
		{"error a string", `{` + id + `,"error":"rate limited"}`, "error"},
		{"retryable a string", `{` + id + `,"error":{"message":"x","retryable":"yes"}}`, "error.retryable"},
		{"reject an object", `{` + id + `,"reject":{"reason":"busy"}}`, "reject"},
		{"handoff payload an array", `{` + id + `,"handoff":{"to":"rag","payload":[]}}`, "handoff.payload"},
		{"heartbeat a string", `{` + id + `,"heartbeat":"yes"}`, "heartbeat"},
		{"invalid UTF-8", `{` + id + `,"trigger":"d` + "\xff" + `ne"}`, "report"},
		{"invalid UTF-8 outside strings", `{` + id + `,"trigger":"done"}` + "\xc3", "report"},
		{"trailing object", `{` + id + `,"trigger":"done"} {}`, "report"},
		{"trailing brace", `{` + id + `,"trigger":"done"}}`, "report"},
		{"trailing bracket", `{` + id + `,"trigger":"done"}]`, "report"},
		{"trailing word", `{` + id + `,"trigger":"done"} x`, "report"},
		{"larger than MaxReport", padTo(`{`+id+`,"trigger":"done"}`, wire.MaxReport+1), "report"},
		{"empty", ``, "report"},
		{"null", `null`, "instance_id"},
		{"an array", `[]`, "report"},
		{"a string", `"report"`, "report"},
		{"truncated", `{` + id + `,"trigger":"do`, "report"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := wire.DecodeReport([]byte(tt.in))
			if err == nil {
				t.Fatalf("got no error, want one naming %s", tt.field)
			}
			var fe *wire.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("got %T %v, want a *wire.FieldError", err, err)
			}
			if fe.Field != tt.field {
				t.Errorf("got field %q (%v), want %q", fe.Field, err, tt.field)
			}
			if !errors.Is(err, wire.ErrInvalid) {
				t.Errorf("got %v, want it to match wire.ErrInvalid", err)
			}
		})
	}
}

func TestDecodeReport_TypeErrorText(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{` + id + `,"error":"x"}`, "wire: error must be an object"},
		{`{"instance_id":"i","step":"3","agent":"a","trigger":"t"}`, "wire: step must be an integer"},
		{`{` + id + `,"heartbeat":1}`, "wire: heartbeat must be a boolean"},
		{`{` + id + `,"trigger":1}`, "wire: trigger must be a string"},
		{`{` + id + `,"trigger":"t","extra":1}`, "wire: extra is unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := wire.DecodeReport([]byte(tt.in))
			if err == nil || err.Error() != tt.want {
				t.Errorf("got %v, want %s", err, tt.want)
			}
		})
	}
}

func TestReport_Outcome_ReportOf(t *testing.T) {
	task := &registry.Task{InstanceID: "inst-42", Step: 3, Agent: "seller", Context: map[string]any{"amount": 120}}
	tests := []struct {
		name      string
		out       registry.Outcome
		err       error
		json      string
		retryable bool
		kind      string // KindOf the error Outcome returns; "" for none
	}{
		{
			name: "trigger and result",
			out:  registry.Outcome{Trigger: "reviewed", Result: map[string]any{"approval": "APPROVED"}},
			json: `{` + id + `,"trigger":"reviewed","result":{"approval":"APPROVED"}}`,
		},
		{
			name: "dynamic hand-off",
			out: registry.Outcome{Result: map[string]any{"draft": "v1"}, Handoff: &registry.Delegation{
				To: "rag", Reason: "capability_match", Explanation: "needs the refund policy",
				Task: "find the refund policy", Payload: map[string]any{"order": "1234"}, ReturnControl: true,
			}},
			json: `{` + id + `,"result":{"draft":"v1"},"handoff":{"to":"rag","reason":"capability_match",` +
				`"explanation":"needs the refund policy","task":"find the refund policy","payload":{"order":"1234"},"return_control":true}}`,
		},
		{
			name: "rejection",
			err:  registry.Reject("queue busy"),
			json: `{` + id + `,"reject":"queue busy"}`,
			kind: "rejected",
		},
		{
			name: "wrapped rejection",
			err:  fmt.Errorf("seller: %w", registry.Reject("queue busy")),
			json: `{` + id + `,"reject":"queue busy"}`,
			kind: "rejected",
		},
		{
			name: "permanent failure",
			err:  registry.Permanent(errors.New("order 1234 does not exist")),
			json: `{` + id + `,"error":{"message":"order 1234 does not exist","retryable":false}}`,
			kind: "error",
		},
		{
			name:      "retryable failure",
			err:       errors.New("seller API unavailable"),
			json:      `{` + id + `,"error":{"message":"seller API unavailable","retryable":true}}`,
			retryable: true,
			kind:      "error",
		},
		{
			name:      "failure with a kind",
			err:       registry.Kind(errors.New("rate limited"), "rate_limited"),
			json:      `{` + id + `,"error":{"message":"rate limited","retryable":true,"kind":"rate_limited"}}`,
			retryable: true,
			kind:      "rate_limited",
		},
		{
			name: "permanent failure with a kind",
			err:  registry.Permanent(registry.Kind(errors.New("quota exhausted"), "quota")),
			json: `{` + id + `,"error":{"message":"quota exhausted","retryable":false,"kind":"quota"}}`,
			kind: "quota",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := wire.ReportOf(task, tt.out, tt.err)
			if err := r.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			data, err := json.Marshal(r)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			if string(data) != tt.json {
				t.Errorf("got %s, want %s", data, tt.json)
			}
			decoded, err := wire.DecodeReport(data)
			if err != nil {
				t.Fatalf("DecodeReport(%s): %v", data, err)
			}
			if !reflect.DeepEqual(decoded, r) {
				t.Errorf("got %s after DecodeReport, want %s", asJSON(decoded), asJSON(r))
			}

			out, runErr := decoded.Outcome()
			if !reflect.DeepEqual(out, tt.out) {
				t.Errorf("got outcome %s, want %s", asJSON(out), asJSON(tt.out))
			}
			if (runErr == nil) != (tt.err == nil) {
				t.Fatalf("got error %v, want %v", runErr, tt.err)
			}
			if got := registry.IsRetryable(runErr); got != tt.retryable {
				t.Errorf("got IsRetryable %v, want %v", got, tt.retryable)
			}
			if got := registry.KindOf(runErr); got != tt.kind {
				t.Errorf("got KindOf %q, want %q", got, tt.kind)
			}
			if tt.kind == "rejected" {
				var re *registry.RejectError
				if !errors.As(runErr, &re) || re.Reason != "queue busy" {
					t.Errorf("got %v, want a *registry.RejectError with reason queue busy", runErr)
				}
			} else if runErr != nil && runErr.Error() != tt.err.Error() {
				t.Errorf("got error text %q, want %q", runErr, tt.err)
			}
			if again := wire.ReportOf(task, out, runErr); !reflect.DeepEqual(again, r) {
				t.Errorf("got %s from ReportOf(Outcome()), want %s", asJSON(again), asJSON(r))
			}
		})
	}
}

func TestReport_Outcome_DefaultKind(t *testing.T) {
	// "kind": "error" is the default: Outcome keeps it, ReportOf leaves it out.
	r, err := wire.DecodeReport([]byte(`{` + id + `,"error":{"message":"x","retryable":true,"kind":"error"}}`))
	if err != nil {
		t.Fatalf("DecodeReport: %v", err)
	}
	_, runErr := r.Outcome()
	if got := registry.KindOf(runErr); got != "error" {
		t.Errorf("got KindOf %q, want %q", got, "error")
	}
	again := wire.ReportOf(&registry.Task{InstanceID: "inst-42", Step: 3, Agent: "seller"}, registry.Outcome{}, runErr)
	if got, want := asJSON(again), `{`+id+`,"error":{"message":"x","retryable":true}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// Ending is Validate, the data check and Outcome in one call: a report
// that breaks the protocol, or carries data no store can keep, is refused
// naming the field; anything else gives the run's outcome or failure.
func TestReport_Ending_ValidatesChecksDataAndReadsTheOutcome(t *testing.T) {
	ident := wire.Report{InstanceID: "inst-42", Step: 3, Agent: "seller"}
	with := func(edit func(r *wire.Report)) *wire.Report {
		r := ident
		edit(&r)
		return &r
	}
	refused := []struct {
		name      string
		report    *wire.Report
		wantField string
	}{
		{"no identity", &wire.Report{Trigger: "done"}, "instance_id"},
		{"nothing said", with(func(r *wire.Report) {}), "report"},
		{"NaN in the result", with(func(r *wire.Report) {
			r.Trigger, r.Result = "done", map[string]any{"score": math.NaN()}
		}), "result.score"},
		{"invalid UTF-8 deep in the result", with(func(r *wire.Report) {
			r.Trigger, r.Result = "done", map[string]any{"items": []any{"ok", "caf\xe9"}}
		}), "result.items[1]"},
		{"a channel in a hand-off's payload", with(func(r *wire.Report) {
			r.Handoff = &wire.Handoff{To: "payer", Payload: map[string]any{"ch": make(chan int)}}
		}), "handoff.payload.ch"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := tt.report.Ending()
			var fe *wire.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.wantField || !errors.Is(err, wire.ErrInvalid) {
				t.Fatalf("got %v, want a *FieldError naming %s", err, tt.wantField)
			}
		})
	}
	t.Run("outcome", func(t *testing.T) {
		out, runErr, err := with(func(r *wire.Report) { r.Trigger, r.Result = "done", map[string]any{"n": 1.0} }).Ending()
		if err != nil || runErr != nil || out.Trigger != "done" || out.Result["n"] != 1.0 {
			t.Fatalf("got %+v, %v, %v, want the outcome done with n=1", out, runErr, err)
		}
	})
	t.Run("failure", func(t *testing.T) {
		_, runErr, err := with(func(r *wire.Report) { r.Error = &wire.Failure{Message: "down", Kind: "rate_limited"} }).Ending()
		if err != nil || registry.KindOf(runErr) != "rate_limited" || registry.IsRetryable(runErr) {
			t.Fatalf("got %v, %v, want a permanent failure of kind rate_limited", runErr, err)
		}
	})
	t.Run("heartbeat", func(t *testing.T) {
		out, runErr, err := with(func(r *wire.Report) { r.Heartbeat = true }).Ending()
		if err != nil || runErr != nil || out.Trigger != "" {
			t.Fatalf("got %+v, %v, %v, want nothing ended and no error", out, runErr, err)
		}
	})
}

func TestAnswer_JSON(t *testing.T) {
	tests := []struct {
		name   string
		answer wire.Answer
		want   string
	}{
		{"ok", wire.Answer{OK: true}, `{"ok":true}`},
		{"stale", wire.Answer{Code: wire.CodeStale, Message: "step 3 is over"},
			`{"ok":false,"code":"stale","message":"step 3 is over"}`},
		{"invalid", wire.Answer{Code: wire.CodeInvalid, Message: "trigger \"reviewd\" matches no rule"},
			`{"ok":false,"code":"invalid","message":"trigger \"reviewd\" matches no rule"}`},
		{"unknown instance", wire.Answer{Code: wire.CodeUnknownInstance, Message: "no instance inst-9"},
			`{"ok":false,"code":"unknown_instance","message":"no instance inst-9"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := json.Marshal(tt.answer)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			if string(data) != tt.want {
				t.Errorf("got %s, want %s", data, tt.want)
			}
			var back wire.Answer
			if err := json.Unmarshal(data, &back); err != nil || back != tt.answer {
				t.Errorf("got %+v, %v decoding %s, want %+v", back, err, data, tt.answer)
			}
		})
	}
}
