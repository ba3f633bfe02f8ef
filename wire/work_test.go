package wire_test

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
	"github.com/batonhq/baton/wire"
)

// fullTask is an agent-to-agent hand-off with every field of the task set.
func fullTask() *registry.Task {
	return &registry.Task{
		Agent:          "payment",
		WorkflowID:     "refund",
		InstanceID:     "inst-42",
		Version:        3,
		State:          "refunding",
		From:           "seller",
		Reason:         "the amount is above my approval limit",
		Kind:           "capability_match",
		Description:    "refund order 1234",
		HandoffID:      "ho-7",
		IdempotencyKey: "inst-42:4",
		Step:           4,
		Attempt:        2,
		Priority:       2,
		Input:          map[string]any{"order": "1234", "lines": []any{1, 2}},
		Context:        map[string]any{"amount": 120.5, "customer": map[string]any{"id": 7, "vip": true}},
		PreviousResult: map[string]any{"approval": "APPROVED"},
		Constraints:    map[string]any{"max_amount": 500},
		Payload:        map[string]any{"account": "acc-1", "note": nil},
		ReturnControl:  true,
		Item:           map[string]any{"sku": "A-1", "qty": 3},
		Index:          1,
		HasItem:        true,
		Deadline:       time.Date(2026, 11, 24, 6, 0, 0, 123456789, time.UTC),
		Heartbeat:      1500 * time.Millisecond,
		Traceparent:    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	}
}

// dispatchTask is the engine's own first dispatch of a run: no hand-off,
// no item, no deadline, nil maps.
func dispatchTask() *registry.Task {
	return &registry.Task{
		Agent:          "customer",
		WorkflowID:     "refund",
		InstanceID:     "inst-42",
		Version:        1,
		State:          "intake",
		Reason:         "start",
		Description:    "take the refund request",
		IdempotencyKey: "inst-42:1",
		Step:           1,
		Attempt:        1,
		Priority:       5,
		Traceparent:    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	}
}

// roundTripTasks are the tasks every round trip must give back.
func roundTripTasks() []struct {
	name string
	task *registry.Task
} {
	notice := fullTask()
	notice.Notice = true
	noWords := fullTask()
	noWords.Reason = ""
	noKind := fullTask()
	noKind.Kind = ""
	retry := dispatchTask()
	retry.Reason, retry.Attempt, retry.Step, retry.IdempotencyKey = "retry", 3, 2, "inst-42:2"
	retry.Context = map[string]any{"amount": 120.5}
	firstItem := dispatchTask()
	firstItem.HasItem, firstItem.Item, firstItem.Index = true, "A-1", 0
	nilItem := dispatchTask()
	nilItem.HasItem, nilItem.Index = true, 2
	emptyPayload := fullTask()
	emptyPayload.Payload = map[string]any{}
	oddHeartbeat := dispatchTask()
	oddHeartbeat.Heartbeat = 1001 * time.Millisecond // 1.001 * 1e9 is a hair under 1001000000
	offsetDeadline := dispatchTask()
	offsetDeadline.Deadline = time.Date(2026, 11, 24, 8, 0, 0, 5, time.FixedZone("CET", 3600))
	low := dispatchTask()
	low.Priority = 10
	critical := dispatchTask()
	critical.Priority = 1
	return []struct {
		name string
		task *registry.Task
	}{
		{"full hand-off", fullTask()},
		{"notice", notice},
		{"hand-off without words", noWords},
		{"hand-off without kind", noKind},
		{"engine dispatch", dispatchTask()},
		{"engine retry", retry},
		{"first item", firstItem},
		{"nil item", nilItem},
		{"empty payload", emptyPayload},
		{"heartbeat of 1.001s", oddHeartbeat},
		{"deadline with an offset", offsetDeadline},
		{"low priority", low},
		{"critical priority", critical},
	}
}

// throughJSON sends m as a remote agent receives it: marshalled, then
// unmarshalled into a fresh message.
func throughJSON(t testing.TB, m *transport.Message) *transport.Message {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	var got transport.Message
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", data, err)
	}
	return &got
}

// alwaysObjects are the task fields Encode always writes as objects: nil
// comes back as {}.
var alwaysObjects = map[string]bool{"Input": true, "Context": true, "PreviousResult": true, "Constraints": true}

// taskDiff compares two tasks field by field and returns one line per field
// that differs. Maps and the item compare as JSON (numbers come back from
// JSON as float64), a nil always-object map equals {}, and times compare
// with Equal.
func taskDiff(got, want *registry.Task) []string {
	var diffs []string
	g, w := reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem()
	for i := range g.NumField() {
		name := g.Type().Field(i).Name
		gf, wf := g.Field(i).Interface(), w.Field(i).Interface()
		switch wv := wf.(type) {
		case time.Time:
			if !gf.(time.Time).Equal(wv) {
				diffs = append(diffs, name+": got "+gf.(time.Time).String()+", want "+wv.String())
			}
			continue
		case map[string]any:
			gm := gf.(map[string]any)
			if alwaysObjects[name] && gm == nil && len(wv) == 0 || alwaysObjects[name] && wv == nil && len(gm) == 0 {
				continue
			}
		}
		switch g.Field(i).Kind() {
		case reflect.Map, reflect.Interface:
			gj, wj := asJSON(gf), asJSON(wf)
			if gj != wj {
				diffs = append(diffs, name+": got "+gj+", want "+wj)
			}
		default:
			if !reflect.DeepEqual(gf, wf) {
				gj, wj := asJSON(gf), asJSON(wf)
				diffs = append(diffs, name+": got "+gj+", want "+wj)
			}
		}
	}
	return diffs
}

func asJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(data)
}

func TestFullTask_SetsEveryField(t *testing.T) {
	// A field added to registry.Task must be added to fullTask, and so to
	// every round trip below.
	v := reflect.ValueOf(fullTask()).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "Notice" {
			continue // the "notice" round trip sets it
		}
		if v.Field(i).IsZero() {
			t.Errorf("fullTask leaves %s at its zero value, want every field set", name)
		}
	}
}

func TestEncode_Decode_JSONRoundTrip(t *testing.T) {
	for _, tt := range roundTripTasks() {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.Decode(throughJSON(t, wire.Encode(tt.task)))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			for _, d := range taskDiff(got, tt.task) {
				t.Error(d)
			}
		})
	}
}

func TestEncode_Decode_InProcess(t *testing.T) {
	for _, tt := range roundTripTasks() {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.Decode(wire.Encode(tt.task))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			for _, d := range taskDiff(got, tt.task) {
				t.Error(d)
			}
			if tt.task.HasItem && !reflect.DeepEqual(got.Item, tt.task.Item) {
				t.Errorf("got item %#v, want %#v (in process the item is not re-shaped)", got.Item, tt.task.Item)
			}
		})
	}
}

func TestEncode_Decode_DefaultIdempotencyKey(t *testing.T) {
	task := dispatchTask()
	task.IdempotencyKey, task.Step = "", 7
	m := wire.Encode(task)
	if got, want := m.Metadata["idempotency_key"], "inst-42:7"; got != want {
		t.Errorf("got metadata.idempotency_key %v, want %q", got, want)
	}
	if got, want := m.Key(), "inst-42:7"; got != want {
		t.Errorf("got bus key %q, want %q", got, want)
	}
	delete(m.Metadata, "idempotency_key")
	got, err := wire.Decode(m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if want := "inst-42:7"; got.IdempotencyKey != want {
		t.Errorf("got IdempotencyKey %q without the key, want %q", got.IdempotencyKey, want)
	}
}

// The keys the protocol gives a HANDOFF message; written out here, not taken
// from wire's constants, so that renaming a constant fails the test.
var (
	specContentKeys = []string{
		"action", "task_description", "input", "context", "previous_result", "constraints", "reason",
	}
	specContentKeysWhenSet = []string{"explanation", "return_control", "payload", "item", "index"}
	specMetadataKeys       = []string{
		"workflow", "version", "instance_id", "step", "attempt", "state", "handoff_id", "idempotency_key", "traceparent",
	}
	specMetadataKeysWhenSet = []string{"deadline", "heartbeat"}
)

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func sorted(lists ...[]string) []string { return slices.Sorted(slices.Values(slices.Concat(lists...))) }

func TestEncode_Keys(t *testing.T) {
	tests := []struct {
		name              string
		task              *registry.Task
		content, metadata []string
	}{
		{"every field set", fullTask(),
			sorted(specContentKeys, specContentKeysWhenSet), sorted(specMetadataKeys, specMetadataKeysWhenSet)},
		{"engine dispatch", dispatchTask(), sorted(specContentKeys), sorted(specMetadataKeys)},
		{"zero task", &registry.Task{}, sorted(specContentKeys), sorted(specMetadataKeys)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := throughJSON(t, wire.Encode(tt.task))
			if got := sortedKeys(m.Content); !slices.Equal(got, tt.content) {
				t.Errorf("got content keys %q, want %q", got, tt.content)
			}
			if got := sortedKeys(m.Metadata); !slices.Equal(got, tt.metadata) {
				t.Errorf("got metadata keys %q, want %q", got, tt.metadata)
			}
		})
	}
}

func TestKeys_MatchSpec(t *testing.T) {
	got := []string{
		wire.KeyAction, wire.KeyTask, wire.KeyInput, wire.KeyContext, wire.KeyPreviousResult,
		wire.KeyConstraints, wire.KeyReason, wire.KeyExplanation, wire.KeyReturnControl,
		wire.KeyPayload, wire.KeyItem, wire.KeyIndex,
		wire.KeyWorkflow, wire.KeyVersion, wire.KeyInstanceID, wire.KeyStep, wire.KeyAttempt,
		wire.KeyState, wire.KeyHandoffID, wire.KeyIdempotencyKey, wire.KeyDeadline,
		wire.KeyHeartbeat, wire.KeyTraceparent,
	}
	want := slices.Concat(specContentKeys, specContentKeysWhenSet, specMetadataKeys[:6],
		[]string{"handoff_id", "idempotency_key", "deadline", "heartbeat", "traceparent"})
	if !slices.Equal(got, want) {
		t.Errorf("got keys %q, want %q", got, want)
	}
	if got, want := []string{wire.ActionRun, wire.ActionNotice, wire.Engine}, []string{"run", "notice", "engine"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestEncode_Message(t *testing.T) {
	m := wire.Encode(fullTask())
	if m.Type != transport.MessageHandoff || m.From != "seller" || m.To != "payment" ||
		m.Priority != transport.PriorityHigh || !m.RequiresAck {
		t.Errorf("got %s from %q to %q at %v, ack %v; want HANDOFF from seller to payment at HIGH, ack true",
			m.Type, m.From, m.To, m.Priority, m.RequiresAck)
	}
	if err := m.Validate(); err != nil {
		t.Errorf("got %v validating the message, want a valid §4 message", err)
	}
	wantContent := `{"action":"run","constraints":{"max_amount":500},` +
		`"context":{"amount":120.5,"customer":{"id":7,"vip":true}},` +
		`"explanation":"the amount is above my approval limit","index":1,` +
		`"input":{"lines":[1,2],"order":"1234"},"item":{"qty":3,"sku":"A-1"},` +
		`"payload":{"account":"acc-1","note":null},"previous_result":{"approval":"APPROVED"},` +
		`"reason":"capability_match","return_control":true,"task_description":"refund order 1234"}`
	if got := asJSON(m.Content); got != wantContent {
		t.Errorf("got content\n%s\nwant\n%s", got, wantContent)
	}
	wantMeta := `{"attempt":2,"deadline":"2026-11-24T06:00:00.123456789Z","handoff_id":"ho-7",` +
		`"heartbeat":1.5,"idempotency_key":"inst-42:4","instance_id":"inst-42","state":"refunding",` +
		`"step":4,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",` +
		`"version":3,"workflow":"refund"}`
	if got := asJSON(m.Metadata); got != wantMeta {
		t.Errorf("got metadata\n%s\nwant\n%s", got, wantMeta)
	}
}

func TestEncode_ObjectsAreNeverNull(t *testing.T) {
	m := throughJSON(t, wire.Encode(&registry.Task{InstanceID: "i", Step: 1}))
	for _, key := range []string{"input", "context", "previous_result", "constraints"} {
		obj, ok := m.Content[key].(map[string]any)
		if !ok || len(obj) != 0 {
			t.Errorf("got content.%s = %#v, want {}", key, m.Content[key])
		}
	}
	if _, ok := m.Content["payload"]; ok {
		t.Errorf("got content.payload = %#v for a nil payload, want no key", m.Content["payload"])
	}
}

func TestEncode_EmptyObjectsAreNotShared(t *testing.T) {
	// In process a decoded task gets the message's maps: a handler writing
	// into its context must not write into another task's.
	a, err := wire.Decode(wire.Encode(dispatchTask()))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	a.Context["written"] = true
	a.Input["written"] = true
	b, err := wire.Decode(wire.Encode(dispatchTask()))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	for name, m := range map[string]map[string]any{"Context": b.Context, "Input": b.Input, "PreviousResult": b.PreviousResult, "Constraints": b.Constraints} {
		if len(m) != 0 {
			t.Errorf("got %s %v in a second task, want {}", name, m)
		}
	}
}

func TestEncode_EngineDispatch(t *testing.T) {
	m := throughJSON(t, wire.Encode(dispatchTask()))
	if got, want := m.From, "engine"; got != want {
		t.Errorf("got from_agent %q, want %q", got, want)
	}
	if got, want := m.Metadata["handoff_id"], ""; got != want {
		t.Errorf("got metadata.handoff_id %#v, want %q", got, want)
	}
	task, err := wire.Decode(m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if task.From != "" {
		t.Errorf("got From %q, want \"\" for an engine dispatch", task.From)
	}
}

func TestEncode_ReasonAndExplanation(t *testing.T) {
	tests := []struct {
		name                  string
		handoffID, kind, why  string
		reason, explanation   any // nil: no key
		wantKind, wantReasonT string
	}{
		{"hand-off", "ho-1", "capability_match", "needs a refund agent", "capability_match", "needs a refund agent", "capability_match", "needs a refund agent"},
		{"hand-off without words", "ho-1", "rule", "", "rule", nil, "rule", ""},
		{"engine dispatch", "", "", "retry", "retry", nil, "", "retry"},
		{"work a rule sent with no agent handing over", "", "rule", "the gate opened", "rule", "the gate opened", "rule", "the gate opened"},
		{"work a rule sent, without words", "", "rule", "", "rule", nil, "rule", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := dispatchTask()
			task.HandoffID, task.Kind, task.Reason = tt.handoffID, tt.kind, tt.why
			m := throughJSON(t, wire.Encode(task))
			if got := m.Content["reason"]; got != tt.reason {
				t.Errorf("got content.reason %#v, want %#v", got, tt.reason)
			}
			if got := m.Content["explanation"]; got != tt.explanation {
				t.Errorf("got content.explanation %#v, want %#v", got, tt.explanation)
			}
			back, err := wire.Decode(m)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if back.Kind != tt.wantKind || back.Reason != tt.wantReasonT {
				t.Errorf("got Kind %q, Reason %q, want %q, %q", back.Kind, back.Reason, tt.wantKind, tt.wantReasonT)
			}
		})
	}
}

func TestDecode_ExplanationWithoutHandoff(t *testing.T) {
	m := wire.Encode(dispatchTask())
	m.Content["explanation"] = "words nobody asked for"
	task, err := wire.Decode(m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if task.Kind != "" || task.Reason != "start" {
		t.Errorf("got Kind %q, Reason %q, want \"\", \"start\"", task.Kind, task.Reason)
	}
}

func TestEncode_Decode_Priority(t *testing.T) {
	tests := []struct {
		rank     int
		priority transport.Priority
		back     int
	}{
		{1, transport.PriorityCritical, 1},
		{2, transport.PriorityHigh, 2},
		{3, transport.PriorityHigh, 2},
		{5, transport.PriorityNormal, 5},
		{7, transport.PriorityNormal, 5},
		{10, transport.PriorityLow, 10},
		{12, transport.PriorityLow, 10},
	}
	for _, tt := range tests {
		t.Run("rank "+strconv.Itoa(tt.rank), func(t *testing.T) {
			task := dispatchTask()
			task.Priority = tt.rank
			m := throughJSON(t, wire.Encode(task))
			if m.Priority != tt.priority {
				t.Errorf("rank %d: got priority %v, want %v", tt.rank, m.Priority, tt.priority)
			}
			back, err := wire.Decode(m)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if back.Priority != tt.back {
				t.Errorf("rank %d: got rank %d back, want %d", tt.rank, back.Priority, tt.back)
			}
		})
	}
}

func TestDecode_NumbersInProcess(t *testing.T) {
	// Go senders may put any integer type in a message they build by hand.
	m := wire.Encode(fullTask())
	m.Metadata["step"] = int64(4)
	m.Metadata["attempt"] = 2.0
	m.Metadata["heartbeat"] = 2
	m.Content["index"] = int64(1)
	task, err := wire.Decode(m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if task.Step != 4 || task.Attempt != 2 || task.Heartbeat != 2*time.Second || task.Index != 1 {
		t.Errorf("got step %d, attempt %d, heartbeat %v, index %d; want 4, 2, 2s, 1", task.Step, task.Attempt, task.Heartbeat, task.Index)
	}
}

func TestDecode_Errors(t *testing.T) {
	type edit func(c, md map[string]any)
	set := func(where, key string, v any) edit {
		return func(c, md map[string]any) {
			if where == "content" {
				c[key] = v
			} else {
				md[key] = v
			}
		}
	}
	del := func(where, key string) edit {
		return func(c, md map[string]any) {
			if where == "content" {
				delete(c, key)
			} else {
				delete(md, key)
			}
		}
	}
	tests := []struct {
		name  string
		edit  edit
		field string
	}{
		{"action missing", del("content", "action"), "content.action"},
		{"action unknown", set("content", "action", "handoff"), "content.action"},
		{"action not a string", set("content", "action", 1.0), "content.action"},
		{"instance_id missing", del("metadata", "instance_id"), "metadata.instance_id"},
		{"instance_id empty", set("metadata", "instance_id", ""), "metadata.instance_id"},
		{"instance_id null", set("metadata", "instance_id", nil), "metadata.instance_id"},
		{"instance_id not a string", set("metadata", "instance_id", 42.0), "metadata.instance_id"},
		{"step missing", del("metadata", "step"), "metadata.step"},
		{"step null", set("metadata", "step", nil), "metadata.step"},
		{"step 0", set("metadata", "step", 0.0), "metadata.step"},
		{"step negative", set("metadata", "step", -3.0), "metadata.step"},
		{"step fractional", set("metadata", "step", 1.5), "metadata.step"},
		{"step string", set("metadata", "step", "4"), "metadata.step"},
		{"step bool", set("metadata", "step", true), "metadata.step"},
		{"step too large", set("metadata", "step", 1e300), "metadata.step"},
		{"attempt fractional", set("metadata", "attempt", 0.5), "metadata.attempt"},
		{"attempt string", set("metadata", "attempt", "2"), "metadata.attempt"},
		{"version string", set("metadata", "version", "v3"), "metadata.version"},
		{"workflow not a string", set("metadata", "workflow", 1.0), "metadata.workflow"},
		{"state not a string", set("metadata", "state", []any{}), "metadata.state"},
		{"handoff_id not a string", set("metadata", "handoff_id", 7.0), "metadata.handoff_id"},
		{"idempotency_key not a string", set("metadata", "idempotency_key", map[string]any{}), "metadata.idempotency_key"},
		{"traceparent not a string", set("metadata", "traceparent", false), "metadata.traceparent"},
		{"task_description not a string", set("content", "task_description", 1.0), "content.task_description"},
		{"reason not a string", set("content", "reason", 1.0), "content.reason"},
		{"explanation not a string", set("content", "explanation", []any{"x"}), "content.explanation"},
		{"input not an object", set("content", "input", "order 1234"), "content.input"},
		{"context not an object", set("content", "context", []any{1.0}), "content.context"},
		{"context a number", set("content", "context", 3.0), "content.context"},
		{"previous_result not an object", set("content", "previous_result", "ok"), "content.previous_result"},
		{"constraints not an object", set("content", "constraints", true), "content.constraints"},
		{"payload not an object", set("content", "payload", []any{}), "content.payload"},
		{"return_control not a bool", set("content", "return_control", "true"), "content.return_control"},
		{"item without index", del("content", "index"), "content.index"},
		{"index null", set("content", "index", nil), "content.index"},
		{"index fractional", set("content", "index", 0.5), "content.index"},
		{"index string", set("content", "index", "1"), "content.index"},
		{"deadline not a time", set("metadata", "deadline", "tomorrow"), "metadata.deadline"},
		{"deadline a date", set("metadata", "deadline", "2026-11-24"), "metadata.deadline"},
		{"deadline without zone", set("metadata", "deadline", "2026-11-24T06:00:00"), "metadata.deadline"},
		{"deadline a number", set("metadata", "deadline", 1.7e9), "metadata.deadline"},
		{"deadline before year 0 in UTC", set("metadata", "deadline", "0000-01-01T00:00:00+01:00"), "metadata.deadline"},
		{"deadline after year 9999 in UTC", set("metadata", "deadline", "9999-12-31T23:30:00-01:00"), "metadata.deadline"},
		{"heartbeat negative", set("metadata", "heartbeat", -1.0), "metadata.heartbeat"},
		{"heartbeat string", set("metadata", "heartbeat", "30s"), "metadata.heartbeat"},
		{"heartbeat too large", set("metadata", "heartbeat", 1e300), "metadata.heartbeat"},
		{"heartbeat at the int64 limit", set("metadata", "heartbeat", 9223372036.854775807), "metadata.heartbeat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := throughJSON(t, wire.Encode(fullTask()))
			tt.edit(m.Content, m.Metadata)
			checkFieldError(t, m, tt.field)
			// The same message as it arrives over JSON.
			data, err := json.Marshal(m)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			var again transport.Message
			if err := json.Unmarshal(data, &again); err != nil {
				t.Fatalf("json.Unmarshal: %v", err)
			}
			checkFieldError(t, &again, tt.field)
		})
	}
}

func TestDecode_MessageErrors(t *testing.T) {
	notHandoff := wire.Encode(fullTask())
	notHandoff.Type = transport.MessageRequest
	noContent := wire.Encode(fullTask())
	noContent.Content = nil
	noMetadata := wire.Encode(fullTask())
	noMetadata.Metadata = nil
	tests := []struct {
		name  string
		m     *transport.Message
		field string
	}{
		{"nil", nil, "message"},
		{"zero message", &transport.Message{}, "message_type"},
		{"wrong message type", notHandoff, "message_type"},
		{"no content", noContent, "content.action"},
		{"no metadata", noMetadata, "metadata.instance_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkFieldError(t, tt.m, tt.field) })
	}
}

func checkFieldError(t *testing.T, m *transport.Message, field string) {
	t.Helper()
	task, err := wire.Decode(m)
	if err == nil {
		t.Fatalf("got task %+v, want an error naming %s", task, field)
	}
	if task != nil {
		t.Errorf("got task %+v with the error, want nil", task)
	}
	var fe *wire.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("got %T %v, want a *wire.FieldError", err, err)
	}
	if fe.Field != field {
		t.Errorf("got field %q (%v), want %q", fe.Field, err, field)
	}
	if !errors.Is(err, wire.ErrInvalid) {
		t.Errorf("got %v, want it to match wire.ErrInvalid", err)
	}
	if !strings.HasPrefix(err.Error(), "wire: "+field+" ") {
		t.Errorf("got %q, want it to start with %q", err, "wire: "+field+" ")
	}
}

// Traceparent is a valid W3C trace context, the same for the same step and
// different between steps of one instance (one trace, two spans).
func TestTraceparent(t *testing.T) {
	a, b := wire.Traceparent("inst-1", "inst-1:2"), wire.Traceparent("inst-1", "inst-1:3")
	valid := regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`)
	if !valid.MatchString(a) || !valid.MatchString(b) {
		t.Fatalf("got %q and %q, want W3C traceparents", a, b)
	}
	if a != wire.Traceparent("inst-1", "inst-1:2") || a[3:35] != b[3:35] || a[36:52] == b[36:52] {
		t.Errorf("got %q and %q, want one trace, two spans, stable", a, b)
	}
}
