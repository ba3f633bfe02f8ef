package handoff_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/handoff"
)

func validHandoff() *bus.Message {
	return &bus.Message{
		Type: bus.MessageHandoff, From: "seller", To: "payment",
		Content: map[string]any{"action": "handoff", "task_description": "refund",
			"context": map[string]any{}, "previous_result": map[string]any{}, "constraints": map[string]any{}},
		Metadata: map[string]any{"handoff_id": "H1", "step": 3},
	}
}

func TestUnpack(t *testing.T) {
	d, err := handoff.Unpack(validHandoff())
	if err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	if d.HandoffID != "H1" || d.Task.Step != 3 || d.Task.Description != "refund" || d.Task.From != "seller" || d.Payload != nil {
		t.Errorf("got %+v, want H1 at step 3 from seller", d)
	}
}

func TestUnpack_Steps(t *testing.T) {
	for _, step := range []any{3, int64(3), 3.0, json.Number("3")} {
		m := validHandoff()
		m.Metadata["step"] = step
		if d, err := handoff.Unpack(m); err != nil || d.Task.Step != 3 {
			t.Errorf("step %#v: got %d, %v, want 3", step, d.Task.Step, err)
		}
	}
}

func TestUnpack_Malformed(t *testing.T) {
	tests := []struct {
		name   string
		change func(m *bus.Message)
		msg    string
	}{
		{"wrong type", func(m *bus.Message) { m.Type = bus.MessageRequest }, `handoff: message: message_type is "REQUEST", want HANDOFF`},
		{"wrong action", func(m *bus.Message) { m.Content["action"] = "execute_handoff" }, `handoff: message: content.action is "execute_handoff", want "handoff"`},
		{"no handoff id", func(m *bus.Message) { delete(m.Metadata, "handoff_id") }, "handoff: message: metadata.handoff_id is required"},
		{"no metadata", func(m *bus.Message) { m.Metadata = nil }, "handoff: message: metadata.handoff_id is required"},
		{"numeric handoff id", func(m *bus.Message) { m.Metadata["handoff_id"] = 7 }, "handoff: message: metadata.handoff_id must be a string"},
		{"no task", func(m *bus.Message) { delete(m.Content, "task_description") }, "handoff: message: content.task_description is required"},
		{"context not an object", func(m *bus.Message) { m.Content["context"] = "x" }, "handoff: message: content.context must be an object"},
		{"payload not an object", func(m *bus.Message) { m.Content["payload"] = []any{} }, "handoff: message: content.payload must be an object"},
		{"return_control not a bool", func(m *bus.Message) { m.Content["return_control"] = "yes" }, "handoff: message: content.return_control must be a boolean"},
		{"fractional step", func(m *bus.Message) { m.Metadata["step"] = 2.5 }, "handoff: message: metadata.step must be a non-negative integer"},
		{"negative step", func(m *bus.Message) { m.Metadata["step"] = -1.0 }, "handoff: message: metadata.step must be a non-negative integer"},
		{"text step", func(m *bus.Message) { m.Metadata["step"] = "2" }, "handoff: message: metadata.step must be a non-negative integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validHandoff()
			tt.change(m)
			_, err := handoff.Unpack(m)
			var me *handoff.MessageError
			if !errors.As(err, &me) || !errors.Is(err, handoff.ErrNotHandoffMessage) {
				t.Fatalf("Unpack = %v, want *MessageError", err)
			}
			if err.Error() != tt.msg {
				t.Errorf("got %q, want %q", err.Error(), tt.msg)
			}
		})
	}
	if _, err := handoff.Unpack(nil); !errors.Is(err, handoff.ErrNotHandoffMessage) {
		t.Errorf("Unpack(nil) = %v, want ErrNotHandoffMessage", err)
	}
}

func FuzzUnpack(f *testing.F) {
	good, _ := json.Marshal(validHandoff())
	f.Add(good)
	f.Add([]byte(`{"message_type":"HANDOFF","content":{"action":"handoff","context":1},"metadata":{"step":1e300}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m bus.Message
		if json.Unmarshal(data, &m) != nil {
			return
		}
		d, err := handoff.Unpack(&m)
		if err != nil {
			if !errors.Is(err, handoff.ErrNotHandoffMessage) {
				t.Fatalf("error %v is not a MessageError", err)
			}
			return
		}
		if d.HandoffID == "" || d.Task.Description == "" || d.Task.Step < 0 {
			t.Fatalf("accepted an incomplete hand-off: %+v", d)
		}
	})
}
