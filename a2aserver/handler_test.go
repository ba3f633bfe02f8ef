package a2aserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/a2aserver"
)

// dialects are the method names and shapes of each protocol version.
var dialects = []struct {
	name                                   string
	v03                                    bool
	send, get, cancel                      string
	working, inputRequired, done, canceled string
	failed                                 string
}{
	{"1.0", false, "SendMessage", "GetTask", "CancelTask", "TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED", "TASK_STATE_CANCELED", "TASK_STATE_FAILED"},
	{"0.3", true, "message/send", "tasks/get", "tasks/cancel", "working", "input-required", "completed", "canceled", "failed"},
}

// taskOf is the task of a send's result: 1.0 wraps it, 0.3 tags it.
func taskOf(t *testing.T, v03 bool, result map[string]any) map[string]any {
	t.Helper()
	if v03 {
		require.Equal(t, "task", result["kind"], "%v", result)
		return result
	}
	task, ok := result["task"].(map[string]any)
	require.True(t, ok, "the result wraps no task: %v", result)
	return task
}

func stateOf(task map[string]any) string {
	st, _ := task["status"].(map[string]any)
	s, _ := st["state"].(string)
	return s
}

// statusText is the text parts of the task's status message.
func statusText(task map[string]any) string {
	st, _ := task["status"].(map[string]any)
	msg, _ := st["message"].(map[string]any)
	parts, _ := msg["parts"].([]any)
	var texts []string
	for _, p := range parts {
		if s, ok := p.(map[string]any)["text"].(string); ok {
			texts = append(texts, s)
		}
	}
	return strings.Join(texts, "\n")
}

// artifactData is the data part of a completed task's artifact.
func artifactData(t *testing.T, task map[string]any) map[string]any {
	t.Helper()
	arts, _ := task["artifacts"].([]any)
	require.Len(t, arts, 1, "%v", task)
	parts, _ := arts[0].(map[string]any)["parts"].([]any)
	require.Len(t, parts, 1)
	data, ok := parts[0].(map[string]any)["data"].(map[string]any)
	require.True(t, ok, "%v", parts[0])
	return data
}

func TestHandler_Send_StartsAndWaitsUntilCompleted(t *testing.T) {
	f := newFixture(t, "")
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			a := f.call("quick", d.send, map[string]any{"message": message(d.v03, "m-"+d.name, "", map[string]any{"amount": 5}, "")})
			require.Nil(t, a.Error, "%+v", a.Error)
			task := taskOf(t, d.v03, a.Result)
			assert.Equal(t, d.done, stateOf(task))
			assert.Equal(t, a2aserver.StartID("quick", "m-"+d.name), task["id"])
			assert.Equal(t, task["id"], task["contextId"])
			data := artifactData(t, task)
			assert.Equal(t, "DONE", data["outcome"])
			assert.Equal(t, "fast", data["context"].(map[string]any)["by"])
			assert.EqualValues(t, 3, data["usage"].(map[string]any)["input_tokens"])
			if d.v03 {
				part := task["artifacts"].([]any)[0].(map[string]any)["parts"].([]any)[0].(map[string]any)
				assert.Equal(t, "data", part["kind"])
			}

			// The same message again is the same start: the same task.
			again := f.call("quick", d.send, map[string]any{"message": message(d.v03, "m-"+d.name, "", map[string]any{"amount": 5}, "")})
			require.Nil(t, again.Error)
			assert.Equal(t, task["id"], taskOf(t, d.v03, again.Result)["id"])

			// The same messageId with other input is a mistake the client
			// hears of.
			other := f.call("quick", d.send, map[string]any{"message": message(d.v03, "m-"+d.name, "", map[string]any{"amount": 6}, "")})
			require.NotNil(t, other.Error)
			assert.Equal(t, a2aserver.CodeInvalidParams, other.Error.Code)
			assert.Equal(t, "message.messageId", other.Error.Data["field"])

			got := f.call("quick", d.get, map[string]any{"id": task["id"]})
			require.Nil(t, got.Error)
			assert.Equal(t, d.done, stateOf(got.Result))
		})
	}
}

func TestHandler_Send_WaitStateIsInputRequiredAndAMessageSignalsIt(t *testing.T) {
	f := newFixture(t, "")
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			a := f.call("approve", d.send, map[string]any{"message": message(d.v03, "w-"+d.name, "", nil, "please approve")})
			require.Nil(t, a.Error, "%+v", a.Error)
			task := taskOf(t, d.v03, a.Result)
			require.Equal(t, d.inputRequired, stateOf(task))
			assert.Contains(t, statusText(task), "approved, rejected")
			id := task["id"].(string)

			// Several signals: a message must name one.
			a = f.call("approve", d.send, map[string]any{"message": message(d.v03, "w2-"+d.name, id, nil, "yes")})
			require.NotNil(t, a.Error)
			assert.Equal(t, a2aserver.CodeInvalidParams, a.Error.Code)
			assert.Contains(t, a.Error.Message, "approved, rejected")
			a = f.call("approve", d.send, map[string]any{"message": message(d.v03, "w3-"+d.name, id, map[string]any{"signal": "maybe"}, "")})
			require.NotNil(t, a.Error)
			assert.Equal(t, a2aserver.CodeInvalidParams, a.Error.Code)
			assert.Equal(t, "signal", a.Error.Data["field"])

			a = f.call("approve", d.send, map[string]any{"message": message(d.v03, "w4-"+d.name, id, map[string]any{"signal": "approved", "data": map[string]any{"by": "ana"}}, "")})
			require.Nil(t, a.Error, "%+v", a.Error)
			task = taskOf(t, d.v03, a.Result)
			assert.Equal(t, d.done, stateOf(task))
			assert.Equal(t, "ana", artifactData(t, task)["context"].(map[string]any)["by"])

			// The signalling message sent again (its answer lost, say) is
			// the same signal: answered with the task, not signalled twice.
			a = f.call("approve", d.send, map[string]any{"message": message(d.v03, "w4-"+d.name, id, map[string]any{"signal": "approved", "data": map[string]any{"by": "ana"}}, "")})
			require.Nil(t, a.Error, "%+v", a.Error)
			assert.Equal(t, d.done, stateOf(taskOf(t, d.v03, a.Result)))

			// A task that is not waiting takes no message.
			a = f.call("approve", d.send, map[string]any{"message": message(d.v03, "w5-"+d.name, id, map[string]any{"signal": "approved"}, "")})
			require.NotNil(t, a.Error)
			assert.Equal(t, a2aserver.CodeUnsupportedOperation, a.Error.Code)
			assert.Contains(t, a.Error.Message, "not waiting")
		})
	}
}

func TestHandler_Send_AnyMessageIsTheOnlySignalOfAWait(t *testing.T) {
	f := newFixture(t, "")
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			a := f.call("confirm", d.send, map[string]any{"message": message(d.v03, "c-"+d.name, "", map[string]any{}, "")})
			require.Nil(t, a.Error, "%+v", a.Error)
			id := taskOf(t, d.v03, a.Result)["id"].(string)
			a = f.call("confirm", d.send, map[string]any{"message": message(d.v03, "c2-"+d.name, id, nil, "yes, go")})
			require.Nil(t, a.Error, "%+v", a.Error)
			task := taskOf(t, d.v03, a.Result)
			assert.Equal(t, d.done, stateOf(task))
			assert.Equal(t, map[string]any{"text": "yes, go"}, artifactData(t, task)["context"].(map[string]any)["answer"])
		})
	}
}

func TestHandler_Send_ReturnImmediatelyDoesNotWait(t *testing.T) {
	f := newFixture(t, "")
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			cfg := map[string]any{"returnImmediately": true}
			if d.v03 {
				cfg = map[string]any{"blocking": false}
			}
			a := f.call("slow", d.send, map[string]any{"message": message(d.v03, "s-"+d.name, "", map[string]any{}, ""), "configuration": cfg})
			require.Nil(t, a.Error, "%+v", a.Error)
			task := taskOf(t, d.v03, a.Result)
			assert.Equal(t, d.working, stateOf(task))

			a = f.call("slow", d.cancel, map[string]any{"id": task["id"]})
			require.Nil(t, a.Error, "%+v", a.Error)
			assert.Equal(t, d.canceled, stateOf(a.Result))
			assert.Contains(t, statusText(a.Result), a2aserver.CancelReason)

			a = f.call("slow", d.cancel, map[string]any{"id": task["id"]})
			require.NotNil(t, a.Error)
			assert.Equal(t, a2aserver.CodeTaskNotCancelable, a.Error.Code)
		})
	}
}

func TestHandler_Send_FailedTaskCarriesTheError(t *testing.T) {
	f := newFixture(t, "")
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			a := f.call("broken", d.send, map[string]any{"message": message(d.v03, "b-"+d.name, "", map[string]any{}, "")})
			require.Nil(t, a.Error, "%+v", a.Error)
			task := taskOf(t, d.v03, a.Result)
			assert.Equal(t, d.failed, stateOf(task))
			assert.Contains(t, statusText(task), "the ledger is closed")
		})
	}
}

func TestHandler_Errors(t *testing.T) {
	f := newFixture(t, "")
	started := f.call("approve", "SendMessage", map[string]any{"message": message(false, "e-1", "", nil, "hi")})
	require.Nil(t, started.Error)
	approveTask := taskOf(t, false, started.Result)["id"].(string)
	for _, tc := range []struct {
		name, workflow, body string
		code                 int
		field                string
	}{
		{"parse error", "quick", `{"jsonrpc": "2.0", "id": 1, `, a2aserver.CodeParseError, ""},
		{"batch", "quick", `[{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}]`, a2aserver.CodeInvalidRequest, ""},
		{"no jsonrpc", "quick", `{"id": 1, "method": "GetTask", "params": {"id": "x"}}`, a2aserver.CodeInvalidRequest, ""},
		{"jsonrpc 1.0", "quick", `{"jsonrpc": "1.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}`, a2aserver.CodeInvalidRequest, ""},
		{"no id", "quick", `{"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "x"}}`, a2aserver.CodeInvalidRequest, ""},
		{"object id", "quick", `{"jsonrpc": "2.0", "id": {}, "method": "GetTask", "params": {"id": "x"}}`, a2aserver.CodeInvalidRequest, ""},
		{"method not a string", "quick", `{"jsonrpc": "2.0", "id": 1, "method": 3}`, a2aserver.CodeInvalidRequest, ""},
		{"unknown method", "quick", `{"jsonrpc": "2.0", "id": 1, "method": "tasks/list"}`, a2aserver.CodeMethodNotFound, ""},
		{"params an array", "quick", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": [1]}`, a2aserver.CodeInvalidParams, "params"},
		{"params of a wrong type", "quick", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": 5}}`, a2aserver.CodeInvalidParams, "id"},
		{"no message", "quick", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}`, a2aserver.CodeInvalidParams, "message"},
		{"no messageId", "quick", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"parts": [{"text": "x"}]}}}`, a2aserver.CodeInvalidParams, "message.messageId"},
		{"no parts", "quick", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "x", "parts": []}}}`, a2aserver.CodeInvalidParams, "message.parts"},
		{"data not an object", "quick", `{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {"messageId": "x", "parts": [{"kind": "data", "data": [1]}]}}}`, a2aserver.CodeInvalidParams, "message.parts[0].data"},
		{"refused input", "quick", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "x", "parts": [{"data": {"amount": "ten"}}]}}}`, a2aserver.CodeInvalidParams, "input.amount"},
		{"text for a declared input", "quick", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "y", "parts": [{"text": "ten"}]}}}`, a2aserver.CodeInvalidParams, "input.amount"},
		{"unknown task", "quick", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}`, a2aserver.CodeTaskNotFound, ""},
		{"another agent's task", "quick", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "` + approveTask + `"}}`, a2aserver.CodeTaskNotFound, ""},
		{"cancel of an unknown task", "quick", `{"jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": {"id": "nope"}}`, a2aserver.CodeTaskNotFound, ""},
		{"signal to an unknown task", "quick", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "z", "taskId": "nope", "parts": [{"text": "x"}]}}}`, a2aserver.CodeTaskNotFound, ""},
		{"signal data not an object", "approve", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "z", "taskId": "` + approveTask + `", "parts": [{"data": {"signal": "approved", "data": 3}}]}}}`, a2aserver.CodeInvalidParams, "data"},
		{"no id to get", "quick", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}}`, a2aserver.CodeInvalidParams, "id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, a := f.post("/a2a/"+tc.workflow, []byte(tc.body))
			assert.Equal(t, http.StatusOK, code)
			require.NotNil(t, a.Error, "%+v", a.Result)
			assert.Equal(t, tc.code, a.Error.Code, a.Error.Message)
			if tc.field != "" {
				assert.Equal(t, tc.field, a.Error.Data["field"], a.Error.Message)
			}
		})
	}
}
