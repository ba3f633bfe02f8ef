package a2aserver

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/ops"
)

// The shapes of messages, tasks and events in both dialects. Incoming
// messages are read by one decoder that takes both (a part is {"text"} or
// {"data"}, with or without 0.3's "kind"); outgoing ones are built for
// the dialect of the request.

// inPart is one part of a message sent to the server; file parts are
// neither text nor data, and ignored.
type inPart struct {
	Kind string          `json:"kind"`
	Text *string         `json:"text"`
	Data json.RawMessage `json:"data"`
}

// inMessage is a message sent to the server.
type inMessage struct {
	MessageID string   `json:"messageId"`
	TaskID    string   `json:"taskId"`
	Parts     []inPart `json:"parts"`
}

// sendParams are the params of a send, streaming or not.
type sendParams struct {
	Message       *inMessage `json:"message"`
	Configuration *struct {
		// ReturnImmediately (1.0) and Blocking false (0.3) ask the answer
		// not to wait for the task to settle.
		ReturnImmediately *bool `json:"returnImmediately"`
		Blocking          *bool `json:"blocking"`
	} `json:"configuration"`
}

// waits reports whether the send's answer waits for the task to settle.
func (p sendParams) waits() bool {
	c := p.Configuration
	return c == nil || !(c.ReturnImmediately != nil && *c.ReturnImmediately) && !(c.Blocking != nil && !*c.Blocking)
}

// taskParams name a task: {"id"} in both dialects, or 1.0 drafts' {"name":
// "tasks/{id}"}.
type taskParams struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func (p taskParams) id() string {
	if p.ID == "" {
		return strings.TrimPrefix(p.Name, "tasks/")
	}
	return p.ID
}

// content is what a message carries: its first data part (ok when there
// is one), and its text parts joined, one per line.
type content struct {
	data    map[string]any
	hasData bool
	text    string
	hasText bool
}

// read checks the message and reads its content: a messageId, parts, and
// a first data part that is an object.
func (m *inMessage) read() (content, *Error) {
	var c content
	if m.MessageID == "" {
		return c, invalidParams("message.messageId", "invalid params: message.messageId is required")
	}
	if len(m.Parts) == 0 {
		return c, invalidParams("message.parts", "invalid params: message.parts must hold a text or data part")
	}
	var texts []string
	for k, p := range m.Parts {
		switch {
		case p.Text != nil && (p.Kind == "" || p.Kind == "text"):
			texts = append(texts, *p.Text)
		case p.Data != nil && (p.Kind == "" || p.Kind == "data") && !c.hasData:
			field := "message.parts[" + strconv.Itoa(k) + "].data"
			var v any
			if err := json.Unmarshal(p.Data, &v); err != nil {
				return c, invalidParams(field, "invalid params: "+field+" is not valid JSON")
			}
			obj, ok := v.(map[string]any)
			if !ok {
				return c, invalidParams(field, "invalid params: "+field+" must be an object")
			}
			c.data, c.hasData = obj, true
		}
	}
	c.text, c.hasText = strings.Join(texts, "\n"), len(texts) > 0
	if !c.hasData && !c.hasText {
		return c, invalidParams("message.parts", "invalid params: message.parts must hold a text or data part")
	}
	return c, nil
}

// value is the message's data: its first data part, else {text}.
func (c content) value() map[string]any {
	if c.hasData {
		return c.data
	}
	return map[string]any{"text": c.text}
}

// obj is a JSON object built for an answer.
type obj = map[string]any

// State names of a task, by instance status, in each dialect.
var stateNames = map[string][2]string{
	ops.StatusRunning:   {"TASK_STATE_WORKING", "working"},
	ops.StatusWaiting:   {"TASK_STATE_INPUT_REQUIRED", "input-required"},
	ops.StatusCompleted: {"TASK_STATE_COMPLETED", "completed"},
	ops.StatusFailed:    {"TASK_STATE_FAILED", "failed"},
	ops.StatusCancelled: {"TASK_STATE_CANCELED", "canceled"},
}

func (d dialect) state(status string) string { return stateNames[status][d] }

func (d dialect) textPart(s string) obj {
	if d == v03 {
		return obj{"kind": "text", "text": s}
	}
	return obj{"text": s, "mediaType": "text/plain"}
}

func (d dialect) dataPart(v any) obj {
	if d == v03 {
		return obj{"kind": "data", "data": v}
	}
	return obj{"data": v, "mediaType": "application/json"}
}

// message is an agent's message about task id.
func (d dialect) message(messageID, id string, parts ...obj) obj {
	m := obj{"messageId": messageID, "contextId": id, "taskId": id, "role": "ROLE_AGENT", "parts": parts}
	if d == v03 {
		m["kind"], m["role"] = "message", "agent"
	}
	return m
}

// view is an instance as a task: the instance, and the signals it waits
// for when it waits.
type view struct {
	in      ops.Instance
	signals []string
}

// settled reports whether the task is finished or waits for input: a
// send's answer need not wait longer, a stream ends.
func (v view) settled() bool { return v.in.Finished() || v.in.Status == ops.StatusWaiting }

// status is the task's status: its state, and a message that says why for
// a task that waits, failed or was cancelled.
func (d dialect) status(v view) obj {
	in := v.in
	st := obj{"state": d.state(in.Status), "timestamp": in.Updated.Format(time.RFC3339Nano)}
	msgID := in.ID + "/" + strconv.Itoa(in.Step) + "/" + in.Status
	switch in.Status {
	case ops.StatusWaiting:
		st["message"] = d.message(msgID, in.ID, d.textPart(waitingText(v.signals)), d.dataPart(obj{"signals": v.signals, "state": in.State}))
	case ops.StatusFailed:
		text := "the instance failed"
		if in.Error != nil {
			text = *in.Error
		}
		st["message"] = d.message(msgID, in.ID, d.textPart(text))
	case ops.StatusCancelled:
		text := "the instance was cancelled"
		if in.CancelReason != "" {
			text += ": " + in.CancelReason
		}
		st["message"] = d.message(msgID, in.ID, d.textPart(text))
	}
	return st
}

// waitingText tells a client what a waiting instance needs.
func waitingText(signals []string) string {
	if len(signals) == 1 {
		return "waiting for signal " + signals[0] + ": any message sends it, with the message's data part (or {text}) as its data"
	}
	return "waiting for one of the signals " + strings.Join(signals, ", ") + `: send a message with a data part {"signal": name, "data": {...}}`
}

// artifact is a completed task's result: one data part {outcome, context,
// usage}.
func (d dialect) artifact(in ops.Instance) obj {
	return obj{"artifactId": "result", "name": "result",
		"parts": []obj{d.dataPart(obj{"outcome": in.Outcome, "context": in.Context, "usage": in.Usage})}}
}

// task is the task of an instance.
func (d dialect) task(v view) obj {
	in := v.in
	t := obj{"id": in.ID, "contextId": in.ID, "status": d.status(v),
		"metadata": obj{"workflow": in.Workflow, "version": in.Version, "state": in.State}}
	if in.Status == ops.StatusCompleted {
		t["artifacts"] = []obj{d.artifact(in)}
	}
	if d == v03 {
		t["kind"] = "task"
	}
	return t
}

// sendResult is a send's answer: 1.0 wraps the task, 0.3 tags it.
func (d dialect) sendResult(v view) obj {
	if d == v03 {
		return d.task(v)
	}
	return obj{"task": d.task(v)}
}

// streamTask is a stream's first event.
func (d dialect) streamTask(v view) obj { return d.sendResult(v) }

// statusUpdate is a stream's event for a new status.
func (d dialect) statusUpdate(v view) obj {
	ev := obj{"taskId": v.in.ID, "contextId": v.in.ID, "status": d.status(v)}
	if d == v03 {
		ev["kind"], ev["final"] = "status-update", v.settled()
		return ev
	}
	return obj{"statusUpdate": ev}
}

// artifactUpdate is a stream's event for a completed task's result, sent
// before its last status.
func (d dialect) artifactUpdate(v view) obj {
	ev := obj{"taskId": v.in.ID, "contextId": v.in.ID, "artifact": d.artifact(v.in), "lastChunk": true}
	if d == v03 {
		ev["kind"] = "artifact-update"
		return ev
	}
	return obj{"artifactUpdate": ev}
}
