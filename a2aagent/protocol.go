package a2aagent

import (
	"bytes"
	"encoding/json"
	"strings"
)

// dialect is the protocol version an agent speaks: the method names, the
// header and the shape of a message differ; the answers are read by one
// decoder that accepts both shapes.
type dialect int

const (
	v10 dialect = iota // 1.0
	v03                // 0.3
)

func (d dialect) String() string {
	if d == v03 {
		return "0.3"
	}
	return "1.0"
}

// Method names of each dialect.
func (d dialect) send() string {
	if d == v03 {
		return "message/send"
	}
	return "SendMessage"
}

func (d dialect) get() string {
	if d == v03 {
		return "tasks/get"
	}
	return "GetTask"
}

func (d dialect) cancel() string {
	if d == v03 {
		return "tasks/cancel"
	}
	return "CancelTask"
}

func (d dialect) subscribe() string {
	if d == v03 {
		return "tasks/resubscribe"
	}
	return "SubscribeToTask"
}

// sendParams are the params of a send that does not wait: one user
// message with the run's text and data.
func (d dialect) sendParams(messageID, contextID, taskID, text string, data map[string]any) any {
	type part = map[string]any
	var parts []part
	if d == v03 {
		if text != "" {
			parts = append(parts, part{"kind": "text", "text": text})
		}
		parts = append(parts, part{"kind": "data", "data": data})
		msg := map[string]any{"kind": "message", "messageId": messageID, "contextId": contextID, "role": "user", "parts": parts}
		if taskID != "" {
			msg["taskId"] = taskID
		}
		return map[string]any{"message": msg, "configuration": map[string]any{"blocking": false}}
	}
	if text != "" {
		parts = append(parts, part{"text": text, "mediaType": "text/plain"})
	}
	parts = append(parts, part{"data": data, "mediaType": "application/json"})
	msg := map[string]any{"messageId": messageID, "contextId": contextID, "role": "ROLE_USER", "parts": parts}
	if taskID != "" {
		msg["taskId"] = taskID
	}
	return map[string]any{"message": msg, "configuration": map[string]any{"returnImmediately": true}}
}

// Task states, as this package names them whatever the spelling.
const (
	stateSubmitted     = "submitted"
	stateWorking       = "working"
	stateCompleted     = "completed"
	stateFailed        = "failed"
	stateCanceled      = "canceled"
	stateInputRequired = "input-required"
	stateRejected      = "rejected"
	stateAuthRequired  = "auth-required"
)

// normalState turns TASK_STATE_INPUT_REQUIRED (1.0) and input-required
// (0.3) into one name; "" when the state is none of the known ones.
func normalState(s string) string {
	s = strings.ToLower(strings.TrimPrefix(strings.ToUpper(s), "TASK_STATE_"))
	s = strings.ReplaceAll(s, "_", "-")
	switch s {
	case "cancelled":
		return stateCanceled
	case stateSubmitted, stateWorking, stateCompleted, stateFailed, stateCanceled,
		stateInputRequired, stateRejected, stateAuthRequired:
		return s
	}
	return ""
}

// settledState reports whether a task in state s is done with for this run:
// terminal, or waiting for input or authentication.
func settledState(s string) bool {
	return s != stateSubmitted && s != stateWorking
}

// part is one part of a message or an artifact; files are kept as neither.
type part struct {
	Text    *string         `json:"text"`
	Data    json.RawMessage `json:"data"`
	Kind    string          `json:"kind"`
	hasData bool
}

func (p *part) UnmarshalJSON(b []byte) error {
	type plain part
	var q plain
	if err := json.Unmarshal(b, &q); err != nil {
		return err
	}
	*p = part(q)
	// A data part whose value is null still is a data part.
	p.hasData = q.Data != nil
	if p.Kind == "data" && !p.hasData {
		p.hasData, p.Data = true, json.RawMessage("null")
	}
	return nil
}

// message is a Message in either dialect.
type message struct {
	MessageID string         `json:"messageId"`
	TaskID    string         `json:"taskId"`
	Parts     []part         `json:"parts"`
	Metadata  map[string]any `json:"metadata"`
}

// text joins the message's text parts, one per line.
func joinText(parts []part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Text == nil {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(*p.Text)
	}
	return b.String()
}

// hasText reports whether any part is a text part.
func hasText(parts []part) bool {
	for _, p := range parts {
		if p.Text != nil {
			return true
		}
	}
	return false
}

// firstData is the value of the first data part, decoded; ok is false when
// there is none.
func firstData(parts []part) (v any, ok bool, err error) {
	for _, p := range parts {
		if !p.hasData {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(p.Data))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return nil, false, err
		}
		return numbers(v), true, nil
	}
	return nil, false, nil
}

// numbers turns the json.Numbers of a decoded value into int64 where they
// are whole numbers that fit, else float64: the types the engine's
// expressions and stores expect.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	}
	return v
}

// status is a task's status.
type status struct {
	State   string   `json:"state"`
	Message *message `json:"message"`
}

// artifact is one output of a task.
type artifact struct {
	Parts []part `json:"parts"`
}

// task is a Task in either dialect; State is its status's state, normalised.
type task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    status         `json:"status"`
	Artifacts []artifact     `json:"artifacts"`
	History   []message      `json:"history"`
	Metadata  map[string]any `json:"metadata"`
	State     string         `json:"-"`
}

// decodeTask reads a Task and checks what the client relies on: an id and
// a known state.
func decodeTask(b []byte) (*task, error) {
	var tk task
	if err := json.Unmarshal(b, &tk); err != nil {
		return nil, err
	}
	return checkTask(&tk)
}

func checkTask(tk *task) (*task, error) {
	if tk.ID == "" {
		return nil, errString("the task has no id")
	}
	tk.State = normalState(tk.Status.State)
	if tk.State == "" {
		return nil, errString("unknown task state " + quote(tk.Status.State))
	}
	return tk, nil
}

// answer is what a send returns: a Task or a Message.
type answer struct {
	Task    *task
	Message *message
}

// decodeAnswer reads a send's result: 1.0 wraps it ({"task": …} or
// {"message": …}), 0.3 tags it ({"kind": "task", …}).
func decodeAnswer(b []byte) (answer, error) {
	var probe struct {
		Task    json.RawMessage `json:"task"`
		Message json.RawMessage `json:"message"`
		Kind    string          `json:"kind"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return answer{}, err
	}
	switch {
	case probe.Task != nil:
		tk, err := decodeTask(probe.Task)
		return answer{Task: tk}, err
	case probe.Message != nil:
		m, err := decodeMessage(probe.Message)
		return answer{Message: m}, err
	case probe.Kind == "task":
		tk, err := decodeTask(b)
		return answer{Task: tk}, err
	case probe.Kind == "message":
		m, err := decodeMessage(b)
		return answer{Message: m}, err
	}
	return answer{}, errString("the result is neither a task nor a message")
}

func decodeMessage(b []byte) (*message, error) {
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m.Parts == nil {
		return nil, errString("the message has no parts")
	}
	return &m, nil
}

// event is one event of a task's stream, as far as following the task
// needs: Task is the task as the event shows it (for a status update,
// only its id, state and status), nil for events that tell no state
// (artifact updates); Message is a message event, which ends the task's
// turn too.
type event struct {
	Task    *task
	Message bool
}

// decodeEvent reads a stream's result in either dialect: 1.0 wraps it
// ({"statusUpdate": …}), 0.3 tags it ({"kind": "status-update", …}).
func decodeEvent(b []byte) (event, error) {
	var probe struct {
		Task           json.RawMessage `json:"task"`
		Message        json.RawMessage `json:"message"`
		StatusUpdate   *statusUpdate   `json:"statusUpdate"`
		ArtifactUpdate json.RawMessage `json:"artifactUpdate"`
		Kind           string          `json:"kind"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return event{}, err
	}
	var su *statusUpdate
	switch {
	case probe.Task != nil:
		tk, err := decodeTask(probe.Task)
		return event{Task: tk}, err
	case probe.Message != nil || probe.Kind == "message":
		return event{Message: true}, nil
	case probe.StatusUpdate != nil:
		su = probe.StatusUpdate
	case probe.ArtifactUpdate != nil || probe.Kind == "artifact-update":
		return event{}, nil
	case probe.Kind == "task":
		tk, err := decodeTask(b)
		return event{Task: tk}, err
	case probe.Kind == "status-update":
		su = new(statusUpdate)
		if err := json.Unmarshal(b, su); err != nil {
			return event{}, err
		}
	default:
		return event{}, errString("the event is none of task, message, status or artifact update")
	}
	tk, err := checkTask(&task{ID: su.TaskID, Status: su.Status})
	return event{Task: tk}, err
}

// statusUpdate is a TaskStatusUpdateEvent in either dialect.
type statusUpdate struct {
	TaskID string `json:"taskId"`
	Status status `json:"status"`
}

type errString string

func (e errString) Error() string { return string(e) }

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
