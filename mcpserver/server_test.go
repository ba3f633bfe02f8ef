package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/mcpserver"
	"github.com/batonhq/baton/rules"
)

func TestServer_ListTools_SchemasFromTheInputDeclaration(t *testing.T) {
	f := newFixture(t, approvalFlow, idFlow)
	cs := f.connect(nil)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, "cancel_instance get_instance list_instances list_workflows signal_instance start_approval start_ticket", names(res.Tools))
	byName := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		byName[tl.Name] = tl
		assert.NotNil(t, tl.OutputSchema, "tool %s declares no output schema", tl.Name)
	}
	start := byName["start_approval"]
	assert.Equal(t, "An expense, checked, then approved by a person.", start.Description)
	schema, _ := json.Marshal(start.InputSchema)
	assert.JSONEq(t, `{"type":"object","required":["amount"],"properties":{
		"amount":{"type":"number","description":"declared as number"},
		"note":{"type":["string","null"],"description":"declared as string?"},
		"id":{"type":"string","description":"the instance's id; a start with an id already used answers that instance (the same input) or is refused"},
		"wait":{"type":"number","minimum":0,"maximum":60,"description":"seconds to wait for the instance to finish or to wait for a signal; the answer is then the instance"}}}`, string(schema))
	ticket, _ := json.Marshal(byName["start_ticket"].InputSchema)
	var ts struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	require.NoError(t, json.Unmarshal(ticket, &ts))
	assert.Contains(t, ts.Properties, "baton_id")
	assert.Contains(t, ts.Properties, "baton_wait")
	assert.Equal(t, map[string]any{"type": "string", "description": "declared as string"}, ts.Properties["id"])
	assert.Equal(t, []string{"id"}, ts.Required)
}

func TestServer_Start_WaitsForTheWaitingInstance(t *testing.T) {
	f := newFixture(t, approvalFlow)
	cs := f.connect(nil)
	out, res := call(t, cs, "start_approval", map[string]any{"amount": 12.5, "note": "taxi", "id": "exp-1", "wait": 30})
	require.False(t, res.IsError, "%v", out)
	assert.Equal(t, "exp-1", out["id"])
	assert.Equal(t, "waiting", out["status"])
	assert.Equal(t, "APPROVAL", out["state"])

	// Without wait, the summary the HTTP API answers to a start.
	out, res = call(t, cs, "start_approval", map[string]any{"amount": 3})
	require.False(t, res.IsError, "%v", out)
	assert.ElementsMatch(t, []string{"id", "workflow", "version", "status"}, keys(out))

	// The same id and input again: the same instance.
	out, res = call(t, cs, "start_approval", map[string]any{"amount": 12.5, "note": "taxi", "id": "exp-1"})
	require.False(t, res.IsError, "%v", out)
	assert.Equal(t, "exp-1", out["id"])
}

func TestServer_Start_DeclaredIDIsInput(t *testing.T) {
	f := newFixture(t, idFlow)
	cs := f.connect(nil)
	out, res := call(t, cs, "start_ticket", map[string]any{"id": "T-7", "baton_id": "run-1", "baton_wait": 30})
	require.False(t, res.IsError, "%v", out)
	assert.Equal(t, "run-1", out["id"])
	assert.Equal(t, "completed", out["status"])
	in, err := f.ops.Get(context.Background(), "run-1")
	require.NoError(t, err)
	assert.Equal(t, "completed", in.Status)
	snap, err := f.store.Instance(context.Background(), "run-1")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"id": "T-7"}, snap.Input)
}

func TestServer_GetListSignalCancel(t *testing.T) {
	f := newFixture(t, approvalFlow)
	cs := f.connect(nil)
	for _, id := range []string{"a-1", "a-2"} {
		_, res := call(t, cs, "start_approval", map[string]any{"amount": 1, "id": id, "wait": 30})
		require.False(t, res.IsError)
	}
	out, res := call(t, cs, "get_instance", map[string]any{"id": "a-1"})
	require.False(t, res.IsError, "%v", out)
	assert.Equal(t, "waiting", out["status"])
	assert.Equal(t, map[string]any{}, out["context"])

	out, res = call(t, cs, "list_instances", map[string]any{"workflow": "approval", "limit": 1})
	require.False(t, res.IsError, "%v", out)
	require.Len(t, out["instances"], 1)
	require.NotNil(t, out["next"])
	out, res = call(t, cs, "list_instances", map[string]any{"workflow": "approval", "cursor": out["next"]})
	require.False(t, res.IsError, "%v", out)
	require.Len(t, out["instances"], 1)
	assert.Nil(t, out["next"])

	out, res = call(t, cs, "signal_instance", map[string]any{"id": "a-1", "signal": "approve", "data": map[string]any{"by": "ana"}})
	require.False(t, res.IsError, "%v", out)
	assert.Equal(t, "a-1", out["id"])
	out, res = call(t, cs, "cancel_instance", map[string]any{"id": "a-2", "reason": "duplicate"})
	require.False(t, res.IsError, "%v", out)
	assert.Equal(t, "cancelled", out["status"])

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in, err := f.mcpBackendWait(ctx, "a-1")
	require.NoError(t, err)
	assert.Equal(t, "completed", in)

	out, res = call(t, cs, "list_workflows", nil)
	require.False(t, res.IsError, "%v", out)
	wfs := out["workflows"].([]any)
	require.Len(t, wfs, 1)
	assert.Equal(t, "approval", wfs[0].(map[string]any)["name"])
}

func TestServer_Refusals_AreIsErrorNamingFieldAndCode(t *testing.T) {
	f := newFixture(t, approvalFlow)
	cs := f.connect(nil)
	_, res := call(t, cs, "start_approval", map[string]any{"amount": 1, "id": "done-1"})
	require.False(t, res.IsError)
	_, res = call(t, cs, "cancel_instance", map[string]any{"id": "done-1"})
	require.False(t, res.IsError)
	for _, tc := range []struct {
		name        string
		tool        string
		args        map[string]any
		code, field string
	}{
		{"missing input field", "start_approval", map[string]any{"note": "x"}, "invalid_field", "amount"},
		{"input of another type", "start_approval", map[string]any{"amount": "ten"}, "invalid_field", "amount"},
		{"wait beyond a minute", "start_approval", map[string]any{"amount": 1, "wait": 61}, "invalid_field", "wait"},
		{"wait not a number", "start_approval", map[string]any{"amount": 1, "wait": "soon"}, "invalid_field", "wait"},
		{"id not a string", "start_approval", map[string]any{"amount": 1, "id": 7}, "invalid_field", "id"},
		{"same id, other input", "start_approval", map[string]any{"amount": 2, "id": "done-1"}, "conflict", "input"},
		{"unknown instance", "get_instance", map[string]any{"id": "nope"}, "unknown_instance", "id"},
		{"no id", "get_instance", map[string]any{}, "invalid_field", "id"},
		{"unknown argument", "get_instance", map[string]any{"id": "x", "verbose": true}, "invalid_field", "verbose"},
		{"bad status", "list_instances", map[string]any{"status": "sleeping"}, "invalid_field", "status"},
		{"bad limit", "list_instances", map[string]any{"limit": 0}, "invalid_field", "limit"},
		{"fractional limit", "list_instances", map[string]any{"limit": 1.5}, "invalid_field", "limit"},
		{"bad cursor", "list_instances", map[string]any{"cursor": "!!"}, "invalid_field", "cursor"},
		{"data not an object", "signal_instance", map[string]any{"id": "done-1", "signal": "approve", "data": []any{1}}, "invalid_field", "data"},
		{"no signal", "signal_instance", map[string]any{"id": "done-1"}, "invalid_field", "signal"},
		{"not waiting", "signal_instance", map[string]any{"id": "done-1", "signal": "approve"}, "not_waiting", ""},
		{"finished", "cancel_instance", map[string]any{"id": "done-1"}, "finished", ""},
		{"reason too long", "cancel_instance", map[string]any{"id": "done-1", "reason": string(make([]byte, 2000))}, "invalid_field", "reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, res := call(t, cs, tc.tool, tc.args)
			e := refusal(t, out, res)
			assert.Equal(t, tc.code, e["code"], "%v", e)
			if tc.field == "" {
				assert.NotContains(t, e, "field")
			} else {
				assert.Equal(t, tc.field, e["field"], "%v", e)
			}
			assert.NotEmpty(t, e["message"])
		})
	}
}

func TestServer_Resources(t *testing.T) {
	f := newFixture(t, approvalFlow)
	cs := f.connect(nil)
	_, res := call(t, cs, "start_approval", map[string]any{"amount": 1, "id": "r-1", "wait": 30})
	require.False(t, res.IsError)
	ctx := context.Background()

	list, err := cs.ListResources(ctx, nil)
	require.NoError(t, err)
	require.Len(t, list.Resources, 1)
	assert.Equal(t, "baton://workflows/approval", list.Resources[0].URI)
	templates, err := cs.ListResourceTemplates(ctx, nil)
	require.NoError(t, err)
	assert.Len(t, templates.ResourceTemplates, 3)

	got, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "baton://workflows/approval"})
	require.NoError(t, err)
	assert.Equal(t, approvalFlow, got.Contents[0].Text)
	assert.Equal(t, "application/yaml", got.Contents[0].MIMEType)

	got, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "baton://instances/r-1"})
	require.NoError(t, err)
	var in map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.Contents[0].Text), &in))
	assert.Equal(t, "waiting", in["status"])

	got, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "baton://instances/r-1/history"})
	require.NoError(t, err)
	var hist []map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.Contents[0].Text), &hist))
	assert.NotEmpty(t, hist)

	for _, uri := range []string{"baton://instances/nope", "baton://instances/nope/history", "baton://workflows/nope", "baton://instances/a/b/history"} {
		_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		assert.Error(t, err, uri)
	}
}

func TestServer_WorkflowsChanged_NotifiesToolListChanged(t *testing.T) {
	f := newFixture(t, approvalFlow)
	changed := make(chan struct{}, 8)
	cs := f.connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	ctx := context.Background()
	// A standalone stream must be open for notifications outside a call:
	// the first list opens the session's stream.
	_, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)

	f.add(idFlow)
	f.mcp.WorkflowsChanged()
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/tools/list_changed after a workflow was added")
	}
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.Contains(t, names(res.Tools), "start_ticket")
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestServer_Initialize_AnswersNoVersionBefore20250618(t *testing.T) {
	f := newFixture(t, approvalFlow)
	for _, tc := range []struct{ asked, want string }{
		{"2025-06-18", "2025-06-18"},
		{"2025-03-26", "2025-11-25"},
		{"2024-11-05", "2025-11-25"},
	} {
		code, _, body := mcpPost(t, f.url, "", []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+tc.asked+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		require.Equal(t, 200, code, "%s", body)
		var answer struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(sseData(body), &answer), "%s", body)
		assert.Equal(t, tc.want, answer.Result.ProtocolVersion, "asked %s", tc.asked)
	}
}

func TestInputSchema_StartArgumentsNeverHideADeclaredField(t *testing.T) {
	for _, tc := range []struct {
		input    string
		id, wait string // the start's own arguments; "" for none
	}{
		{"{amount: number}", "id", "wait"},
		{"{id: string}", "baton_id", "wait"},
		{"{wait: int}", "id", "baton_wait"},
		{"{id: string, baton_id: string, wait: int, baton_wait: int}", "", ""},
	} {
		t.Run(tc.input, func(t *testing.T) {
			w, err := rules.Parse("w.yaml", []byte("workflow: w\ninitial: A\ninput: "+tc.input+"\nagents:\n  a: {}\nstates:\n  A: {agent: a}\n  B: {terminal: true}\nrules:\n  - {id: r, from: a, trigger: done, next: B}\n"))
			require.NoError(t, err)
			props := mcpserver.InputSchema(w.Input)["properties"].(map[string]any)
			for _, f := range w.Input.Fields {
				assert.Equal(t, "declared as "+f.Declared(), props[f.Name].(map[string]any)["description"], f.Name)
			}
			for _, own := range []string{tc.id, tc.wait} {
				if own != "" {
					assert.NotContains(t, props[own].(map[string]any)["description"], "declared as", own)
				}
			}
			assert.Len(t, props, len(w.Input.Fields)+len(slices.DeleteFunc([]string{tc.id, tc.wait}, func(s string) bool { return s == "" })))
		})
	}
}
