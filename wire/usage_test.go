package wire_test

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/wire"
)

func TestDecodeReport_UsageAndProgress(t *testing.T) {
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
		{"trigger with usage", `{` + id + `,"trigger":"done","usage":{"input_tokens":1200,"output_tokens":350,"cost":0.0123,"model":"m-1"}}`,
			with(func(r *wire.Report) {
				r.Trigger = "done"
				r.Usage = registry.Usage{InputTokens: 1200, OutputTokens: 350, Cost: 0.0123, Model: "m-1"}
			})},
		{"error with usage", `{` + id + `,"error":{"message":"x"},"usage":{"cost":0.5}}`,
			with(func(r *wire.Report) {
				r.Error = &wire.Failure{Message: "x"}
				r.Usage = registry.Usage{Cost: 0.5}
			})},
		{"empty usage", `{` + id + `,"reject":"busy","usage":{}}`,
			with(func(r *wire.Report) { r.Reject = ptr("busy") })},
		{"progress", `{` + id + `,"progress":{"message":"searching flights","delta":"partial","data":{"found":2}}}`,
			with(func(r *wire.Report) {
				r.Progress = &registry.Progress{Message: "searching flights", Delta: "partial", Data: map[string]any{"found": 2.0}}
			})},
		{"empty progress", `{` + id + `,"progress":{}}`,
			with(func(r *wire.Report) { r.Progress = &registry.Progress{} })},
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

func TestDecodeReport_UsageAndProgressErrors(t *testing.T) {
	tests := []struct {
		name, in, field string
	}{
		{"negative input tokens", `{` + id + `,"trigger":"done","usage":{"input_tokens":-1}}`, "usage.input_tokens"},
		{"negative output tokens", `{` + id + `,"trigger":"done","usage":{"output_tokens":-5}}`, "usage.output_tokens"},
		{"negative cost", `{` + id + `,"trigger":"done","usage":{"cost":-0.01}}`, "usage.cost"},
		{"cost too large for a number", `{` + id + `,"trigger":"done","usage":{"cost":1e400}}`, "usage.cost"},
		{"cost a string", `{` + id + `,"trigger":"done","usage":{"cost":"0.5"}}`, "usage.cost"},
		{"tokens fractional", `{` + id + `,"trigger":"done","usage":{"input_tokens":1.5}}`, "usage.input_tokens"},
		{"tokens a string", `{` + id + `,"trigger":"done","usage":{"output_tokens":"many"}}`, "usage.output_tokens"},
		{"model a number", `{` + id + `,"trigger":"done","usage":{"model":4}}`, "usage.model"},
		{"usage an array", `{` + id + `,"trigger":"done","usage":[]}`, "usage"},
		{"unknown usage member", `{` + id + `,"trigger":"done","usage":{"tokens":5}}`, "tokens"},
		{"usage on a heartbeat", `{` + id + `,"heartbeat":true,"usage":{"cost":1}}`, "usage"},
		{"usage on progress", `{` + id + `,"progress":{},"usage":{"cost":1}}`, "usage"},
		{"progress with a trigger", `{` + id + `,"progress":{"message":"m"},"trigger":"done"}`, "progress"},
		{"progress with an error", `{` + id + `,"progress":{"message":"m"},"error":{"message":"x"}}`, "progress"},
		{"progress with a reject", `{` + id + `,"progress":{"message":"m"},"reject":"busy"}`, "progress"},
		{"progress with a handoff", `{` + id + `,"progress":{"message":"m"},"handoff":{"to":"rag"}}`, "progress"},
		{"progress with a result", `{` + id + `,"progress":{"message":"m"},"result":{"x":1}}`, "progress"},
		{"progress with a heartbeat", `{` + id + `,"progress":{"message":"m"},"heartbeat":true}`, "progress"},
		{"progress without identity", `{"progress":{"message":"m"}}`, "instance_id"},
		{"progress without a step", `{"instance_id":"i","agent":"a","progress":{"message":"m"}}`, "step"},
		{"progress without an agent", `{"instance_id":"i","step":1,"progress":{"message":"m"}}`, "agent"},
		{"progress a string", `{` + id + `,"progress":"searching"}`, "progress"},
		{"progress data an array", `{` + id + `,"progress":{"data":[1]}}`, "progress.data"},
		{"unknown progress member", `{` + id + `,"progress":{"percent":5}}`, "percent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := wire.DecodeReport([]byte(tt.in))
			var fe *wire.FieldError
			if !errors.As(err, &fe) || !errors.Is(err, wire.ErrInvalid) {
				t.Fatalf("got %T %v, want a *wire.FieldError matching ErrInvalid", err, err)
			}
			if fe.Field != tt.field {
				t.Errorf("got field %q (%v), want %q", fe.Field, err, tt.field)
			}
		})
	}
}

// A report built in Go (not decoded) is held to the same checks: NaN and
// infinite costs cannot come from JSON, but can from a program.
func TestReport_Validate_NonFiniteCost(t *testing.T) {
	for _, cost := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		r := wire.Report{InstanceID: "i", Step: 1, Agent: "a", Trigger: "done", Usage: registry.Usage{Cost: cost}}
		var fe *wire.FieldError
		if err := r.Validate(); !errors.As(err, &fe) || fe.Field != "usage.cost" {
			t.Errorf("cost %v: got %v, want a *wire.FieldError naming usage.cost", cost, err)
		}
	}
}

// Usage travels both ways: Outcome hands it to the engine with a failed
// run's error too, and ReportOf writes it back.
func TestReport_Outcome_CarriesUsage(t *testing.T) {
	u := registry.Usage{InputTokens: 10, OutputTokens: 2, Cost: 0.25, Model: "m"}
	task := &registry.Task{InstanceID: "i", Step: 2, Agent: "a"}
	for _, r := range []wire.Report{
		{InstanceID: "i", Step: 2, Agent: "a", Trigger: "done", Usage: u},
		{InstanceID: "i", Step: 2, Agent: "a", Error: &wire.Failure{Message: "x", Retryable: true}, Usage: u},
		{InstanceID: "i", Step: 2, Agent: "a", Reject: ptr("busy"), Usage: u},
		{InstanceID: "i", Step: 2, Agent: "a", Handoff: &wire.Handoff{To: "b"}, Usage: u},
	} {
		out, runErr := r.Outcome()
		if out.Usage != u {
			t.Errorf("%s: got usage %+v from Outcome, want %+v", asJSON(r), out.Usage, u)
		}
		if back := wire.ReportOf(task, out, runErr); back.Usage != u {
			t.Errorf("%s: got usage %+v from ReportOf, want %+v", asJSON(r), back.Usage, u)
		}
	}
}
