package typescript_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/corpus.json from the Go codec")

// corpusFile holds work messages and reports with the Go codec's verdict on
// each: the task it decodes, or the field its error names. The node test
// tests/codec.test.mjs checks that the TypeScript codec agrees, so that both
// refuse the same messages naming the same field.
const corpusFile = "testdata/corpus.json"

type corpus struct {
	Work    []workCase   `json:"work"`
	Reports []reportCase `json:"reports"`
}

type workCase struct {
	Name    string         `json:"name"`
	Message map[string]any `json:"message"`
	Field   string         `json:"field,omitempty"`
	Work    map[string]any `json:"work,omitempty"`
}

type reportCase struct {
	Name  string `json:"name"`
	JSON  string `json:"json"`
	Field string `json:"field,omitempty"`
}

func TestCorpus_IsTheGoCodecsVerdict(t *testing.T) {
	got, err := json.MarshalIndent(buildCorpus(t), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(corpusFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(corpusFile)
	if err != nil {
		t.Fatalf("%v (go test ./sdk/typescript -run Corpus -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what the Go codec says: run go test ./sdk/typescript -run Corpus -update", corpusFile)
	}
}

func buildCorpus(t *testing.T) corpus {
	deadline := time.Date(2026, 11, 24, 6, 0, 0, 123_000_000, time.UTC)
	full := &registry.Task{
		Agent: "seller", WorkflowID: "refund", InstanceID: "inst-1", Version: 2, State: "REVIEWING",
		From: "customer", Reason: "refunds need the seller", Kind: "rule", Description: "Review order 7",
		HandoffID: "inst-1:3", Step: 3, Attempt: 1, Priority: 2,
		Input: map[string]any{"order": 7.0}, Context: map[string]any{"amount": 120.0},
		PreviousResult: map[string]any{"ok": true}, Constraints: map[string]any{"max": 1.0},
		Payload: map[string]any{"q": "why"}, ReturnControl: true, Item: "a", HasItem: true, Index: 4,
		Deadline: deadline, Heartbeat: 1500 * time.Millisecond,
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	}
	engineRun := &registry.Task{Agent: "payment", WorkflowID: "refund", InstanceID: "inst-2", Version: 1,
		State: "REFUNDING", Reason: "retry", Step: 5, Attempt: 2, Priority: 10}
	notice := &registry.Task{Agent: "notification", InstanceID: "inst-3", Step: 9, Notice: true, HandoffID: "inst-3:9", From: "payment", Kind: "rule", Priority: 1}

	var c corpus
	addWork := func(name string, m map[string]any) {
		c.Work = append(c.Work, workCase{Name: name, Message: m})
	}
	base := func(task *registry.Task) map[string]any {
		m := wire.Encode(task)
		m.MessageID, m.Timestamp = "00000000-0000-4000-8000-000000000000", time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	with := func(task *registry.Task, change func(content, metadata, msg map[string]any)) map[string]any {
		m := base(task)
		change(m["content"].(map[string]any), m["metadata"].(map[string]any), m)
		return m
	}
	addWork("a hand-off with every field", base(full))
	addWork("the engine's own dispatch", base(engineRun))
	addWork("a final notice", base(notice))
	addWork("an explanation without a hand-off id is dropped", with(engineRun, func(c, _, _ map[string]any) { c["explanation"] = "words" }))
	addWork("no idempotency key: instance:step", with(engineRun, func(_, md, _ map[string]any) { delete(md, "idempotency_key") }))
	addWork("priority alias URGENT", with(engineRun, func(_, _, m map[string]any) { m["priority"] = "URGENT" }))
	for _, bad := range []struct {
		name   string
		change func(content, metadata, msg map[string]any)
	}{
		{"not a hand-off", func(_, _, m map[string]any) { m["message_type"] = "REQUEST" }},
		{"unknown action", func(c, _, _ map[string]any) { c["action"] = "walk" }},
		{"no action", func(c, _, _ map[string]any) { delete(c, "action") }},
		{"no instance id", func(_, md, _ map[string]any) { delete(md, "instance_id") }},
		{"empty instance id", func(_, md, _ map[string]any) { md["instance_id"] = "" }},
		{"instance id a number", func(_, md, _ map[string]any) { md["instance_id"] = 5.0 }},
		{"no step", func(_, md, _ map[string]any) { delete(md, "step") }},
		{"step zero", func(_, md, _ map[string]any) { md["step"] = 0.0 }},
		{"step a fraction", func(_, md, _ map[string]any) { md["step"] = 1.5 }},
		{"step a string", func(_, md, _ map[string]any) { md["step"] = "3" }},
		{"attempt a string", func(_, md, _ map[string]any) { md["attempt"] = "1" }},
		{"version a fraction", func(_, md, _ map[string]any) { md["version"] = 1.25 }},
		{"workflow a number", func(_, md, _ map[string]any) { md["workflow"] = 1.0 }},
		{"traceparent a bool", func(_, md, _ map[string]any) { md["traceparent"] = true }},
		{"task description a list", func(c, _, _ map[string]any) { c["task_description"] = []any{"x"} }},
		{"input a list", func(c, _, _ map[string]any) { c["input"] = []any{1.0} }},
		{"context a string", func(c, _, _ map[string]any) { c["context"] = "x" }},
		{"payload a number", func(c, _, _ map[string]any) { c["payload"] = 1.0 }},
		{"return control a string", func(c, _, _ map[string]any) { c["return_control"] = "yes" }},
		{"item without index", func(c, _, _ map[string]any) { c["item"] = "x"; delete(c, "index") }},
		{"index a fraction", func(c, _, _ map[string]any) { c["item"], c["index"] = "x", 0.5 }},
		{"deadline not a time", func(_, md, _ map[string]any) { md["deadline"] = "tomorrow" }},
		{"deadline past year 9999 in UTC", func(_, md, _ map[string]any) { md["deadline"] = "9999-12-31T23:00:00-02:00" }},
		{"heartbeat negative", func(_, md, _ map[string]any) { md["heartbeat"] = -1.0 }},
		{"heartbeat a string", func(_, md, _ map[string]any) { md["heartbeat"] = "1s" }},
		{"priority unknown", func(_, _, m map[string]any) { m["priority"] = "SOON" }},
	} {
		addWork(bad.name, with(full, bad.change))
	}
	for i := range c.Work {
		wc := &c.Work[i]
		data, _ := json.Marshal(wc.Message)
		var m transport.Message
		if err := json.Unmarshal(data, &m); err != nil {
			var ve *transport.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("%s: %v", wc.Name, err)
			}
			wc.Field = ve.Field
			continue
		}
		task, err := wire.Decode(&m)
		var fe *wire.FieldError
		switch {
		case errors.As(err, &fe):
			wc.Field = fe.Field
		case err != nil:
			t.Fatalf("%s: %v", wc.Name, err)
		default:
			wc.Work = tsWork(task, m.Priority)
		}
	}

	for _, r := range []struct{ name, json string }{
		{"a trigger and result", `{"instance_id":"i","step":3,"agent":"a","trigger":"done","result":{"x":1}}`},
		{"an error", `{"instance_id":"i","step":3,"agent":"a","error":{"message":"rate limited","retryable":true,"kind":"rate_limited"}}`},
		{"a rejection", `{"instance_id":"i","step":3,"agent":"a","reject":"queue busy"}`},
		{"a hand-off", `{"instance_id":"i","step":3,"agent":"a","handoff":{"to":"b","reason":"clarification","payload":{},"return_control":true}}`},
		{"a heartbeat", `{"instance_id":"i","step":3,"agent":"a","heartbeat":true}`},
		{"nothing said", `{"instance_id":"i","step":3,"agent":"a"}`},
		{"two things said", `{"instance_id":"i","step":3,"agent":"a","trigger":"t","reject":"r"}`},
		{"a heartbeat with a result", `{"instance_id":"i","step":3,"agent":"a","heartbeat":true,"result":{}}`},
		{"no instance id", `{"step":3,"agent":"a","trigger":"t"}`},
		{"step zero", `{"instance_id":"i","step":0,"agent":"a","trigger":"t"}`},
		{"step a string", `{"instance_id":"i","step":"3","agent":"a","trigger":"t"}`},
		{"no agent", `{"instance_id":"i","step":3,"trigger":"t"}`},
		{"an unknown field", `{"instance_id":"i","step":3,"agent":"a","trigger":"t","mood":"good"}`},
		{"an error without message", `{"instance_id":"i","step":3,"agent":"a","error":{"retryable":true}}`},
		{"retryable a string", `{"instance_id":"i","step":3,"agent":"a","error":{"message":"m","retryable":"yes"}}`},
		{"a hand-off without target", `{"instance_id":"i","step":3,"agent":"a","handoff":{"reason":"rule"}}`},
		{"a result alone", `{"instance_id":"i","step":3,"agent":"a","result":{"x":1}}`},
		{"a result that is a list", `{"instance_id":"i","step":3,"agent":"a","trigger":"t","result":[1]}`},
		{"a reject that is a number", `{"instance_id":"i","step":3,"agent":"a","reject":5}`},
		{"a trigger with usage", `{"instance_id":"i","step":3,"agent":"a","trigger":"t","usage":{"input_tokens":1200,"output_tokens":350,"cost":0.0123,"model":"large-2"}}`},
		{"an error with usage", `{"instance_id":"i","step":3,"agent":"a","error":{"message":"m","retryable":false},"usage":{"cost":0.5}}`},
		{"a rejection with usage", `{"instance_id":"i","step":3,"agent":"a","reject":"r","usage":{"input_tokens":10}}`},
		{"a hand-off with usage", `{"instance_id":"i","step":3,"agent":"a","handoff":{"to":"b"},"usage":{"output_tokens":1}}`},
		{"empty usage", `{"instance_id":"i","step":3,"agent":"a","trigger":"t","usage":{}}`},
		{"usage alone", `{"instance_id":"i","step":3,"agent":"a","usage":{"cost":1}}`},
		{"negative input tokens", `{"instance_id":"i","step":3,"agent":"a","trigger":"t","usage":{"input_tokens":-1}}`},
		{"negative output tokens", `{"instance_id":"i","step":3,"agent":"a","trigger":"t","usage":{"output_tokens":-5}}`},
		{"negative cost", `{"instance_id":"i","step":3,"agent":"a","trigger":"t","usage":{"cost":-0.01}}`},
		{"fractional tokens", `{"instance_id":"i","step":3,"agent":"a","trigger":"t","usage":{"input_tokens":1.5}}`},
		{"tokens a string", `{"instance_id":"i","step":3,"agent":"a","trigger":"t","usage":{"output_tokens":"3"}}`},
		{"cost a string", `{"instance_id":"i","step":3,"agent":"a","trigger":"t","usage":{"cost":"0.1"}}`},
		{"model a number", `{"instance_id":"i","step":3,"agent":"a","trigger":"t","usage":{"model":4}}`},
		{"usage a list", `{"instance_id":"i","step":3,"agent":"a","trigger":"t","usage":[1]}`},
		{"negative usage without identity", `{"step":3,"agent":"a","trigger":"t","usage":{"cost":-1}}`},
		{"progress", `{"instance_id":"i","step":3,"agent":"a","progress":{"message":"checking the order","delta":"The order ","data":{"lines":3}}}`},
		{"empty progress", `{"instance_id":"i","step":3,"agent":"a","progress":{}}`},
		{"progress with a trigger", `{"instance_id":"i","step":3,"agent":"a","trigger":"t","progress":{"message":"m"}}`},
		{"progress with a result", `{"instance_id":"i","step":3,"agent":"a","result":{},"progress":{"message":"m"}}`},
		{"progress with a heartbeat", `{"instance_id":"i","step":3,"agent":"a","heartbeat":true,"progress":{}}`},
		{"progress with usage", `{"instance_id":"i","step":3,"agent":"a","progress":{"message":"m"},"usage":{"cost":1}}`},
		{"progress with empty usage", `{"instance_id":"i","step":3,"agent":"a","progress":{"message":"m"},"usage":{"model":""}}`},
		{"a heartbeat with usage", `{"instance_id":"i","step":3,"agent":"a","heartbeat":true,"usage":{"input_tokens":1}}`},
		{"progress a string", `{"instance_id":"i","step":3,"agent":"a","progress":"working"}`},
		{"progress message a number", `{"instance_id":"i","step":3,"agent":"a","progress":{"message":1}}`},
		{"progress delta a bool", `{"instance_id":"i","step":3,"agent":"a","progress":{"delta":true}}`},
		{"progress data a list", `{"instance_id":"i","step":3,"agent":"a","progress":{"data":[1]}}`},
		{"progress without agent", `{"instance_id":"i","step":3,"progress":{"message":"m"}}`},
	} {
		rc := reportCase{Name: r.name, JSON: r.json}
		_, err := wire.DecodeReport([]byte(r.json))
		var fe *wire.FieldError
		if errors.As(err, &fe) {
			rc.Field = fe.Field
		} else if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		c.Reports = append(c.Reports, rc)
	}
	return c
}

// tsWork is the Work the TypeScript decodeWork should make of task.
func tsWork(task *registry.Task, p transport.Priority) map[string]any {
	obj := func(m map[string]any) map[string]any {
		if m == nil {
			return map[string]any{}
		}
		return m
	}
	w := map[string]any{
		"agent": task.Agent, "priority": p.String(), "notice": task.Notice, "workflow": task.WorkflowID,
		"version": task.Version, "instanceId": task.InstanceID, "step": task.Step, "attempt": task.Attempt,
		"state": task.State, "handoffId": task.HandoffID, "idempotencyKey": task.IdempotencyKey,
		"traceparent": task.Traceparent, "description": task.Description, "reason": task.Reason, "kind": task.Kind,
		"input": obj(task.Input), "context": obj(task.Context), "previousResult": obj(task.PreviousResult),
		"constraints": obj(task.Constraints), "returnControl": task.ReturnControl,
	}
	if task.From != "" {
		w["from"] = task.From
	}
	if task.Payload != nil {
		w["payload"] = task.Payload
	}
	if task.HasItem {
		w["item"], w["index"] = task.Item, task.Index
	}
	if !task.Deadline.IsZero() {
		w["deadline"] = task.Deadline.UTC().Format(time.RFC3339Nano)
	}
	if task.Heartbeat > 0 {
		w["heartbeat"] = task.Heartbeat.Seconds()
	}
	return w
}
