package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// deskFlow: the writer writes (mode "hold" keeps it at work until the test
// ends), then the instance waits for a person's signal.
const deskFlow = `workflow: desk
version: 2
initial: WRITING
agents:
  writer: {}
  boss: {selectable: true}
states:
  WRITING: {agent: writer}
  APPROVAL: {wait: {signals: [approve, reject]}, timeout: 1h}
  DONE: {terminal: true}
  REJECTED: {terminal: true}
rules:
  - {id: written, from: writer, trigger: written, next: APPROVAL}
  - {id: approve, from: APPROVAL, trigger: approve, next: DONE}
  - {id: reject, from: APPROVAL, trigger: reject, next: REJECTED}
`

// fixture is an engine on a MemStore and the in-memory bus, and the
// operations layer over them.
type fixture struct {
	t     *testing.T
	store *record.MemStore
	eng   *engine.Engine
	ops   *ops.Ops
	mu    sync.Mutex
	// observe, when set (under mu), hears the engine's events.
	observe func(engine.Event)
}

// onEvent makes fn hear the engine's events.
func (f *fixture) onEvent(fn func(engine.Event)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observe = fn
}

func newFixture(t *testing.T, opts ...ops.Option) *fixture {
	t.Helper()
	w, err := rules.Parse("desk.yaml", []byte(deskFlow))
	require.NoError(t, err)
	release := make(chan struct{})
	writer := registry.HandlerFunc(func(ctx context.Context, task *registry.Task) (registry.Outcome, error) {
		if task.Input["mode"] == "hold" {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return registry.Outcome{}, ctx.Err()
		}
		return registry.Outcome{Trigger: "written"}, nil
	})
	reg, err := engine.NewRegistry(w, map[string]registry.Handler{"writer": writer, "boss": writer})
	require.NoError(t, err)
	store := record.NewMemStore()
	f := &fixture{t: t, store: store}
	eng, err := engine.New(w, reg, engine.WithStore(store), engine.WithObserver(func(ev engine.Event) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.observe != nil {
			f.observe(ev)
		}
	}))
	require.NoError(t, err)
	t.Cleanup(func() {
		close(release)
		_ = eng.Close()
	})
	f.eng, f.ops = eng, ops.New(store, ops.NewEngines(eng), opts...)
	return f
}

// waitState polls the store until the instance is in state (bounded).
func (f *fixture) waitState(id, state string) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap, err := f.store.Instance(context.Background(), id)
		if err == nil && snap.State == state {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("instance %s: state %q, want %s (err %v)", id, snap.State, state, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// requireError checks that err is an *ops.Error of kind, with code and field.
func requireError(t *testing.T, err error, kind error, code, field string) *ops.Error {
	t.Helper()
	require.ErrorIs(t, err, kind)
	var oe *ops.Error
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, code, oe.Code, oe.Message)
	assert.Equal(t, field, oe.Field, oe.Message)
	return oe
}

func TestOps_Start_SameIDSameInputIsARetry(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	req := ops.StartRequest{Workflow: "desk", ID: "a-1", Input: map[string]any{"n": 1}}
	sum, created, err := f.ops.Start(ctx, req)
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, ops.Summary{ID: "a-1", Workflow: "desk", Version: 2, Status: ops.StatusRunning}, sum)

	// The same number, as another Go type: the same JSON input.
	sum, created, err = f.ops.Start(ctx, ops.StartRequest{Workflow: "desk", ID: "a-1", Input: map[string]any{"n": 1.0}})
	require.NoError(t, err)
	assert.False(t, created, "a retry creates nothing")
	assert.Equal(t, "a-1", sum.ID)
}

func TestOps_Start_OtherInputIsAConflict(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, _, err := f.ops.Start(ctx, ops.StartRequest{Workflow: "desk", ID: "a-1", Input: map[string]any{"n": 1}})
	require.NoError(t, err)
	_, created, err := f.ops.Start(ctx, ops.StartRequest{Workflow: "desk", ID: "a-1", Input: map[string]any{"n": 2}})
	assert.False(t, created)
	requireError(t, err, ops.ErrConflict, ops.CodeConflict, "input")
}

func TestOps_Start_Refusals(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tests := []struct {
		name        string
		req         ops.StartRequest
		kind        error
		code, field string
	}{
		{"unknown workflow", ops.StartRequest{Workflow: "nope"}, ops.ErrNotFound, ops.CodeUnknownWorkflow, "workflow"},
		{"unknown version", ops.StartRequest{Workflow: "desk", Version: 7}, ops.ErrNotFound, ops.CodeUnknownVersion, "version"},
		{"negative version", ops.StartRequest{Workflow: "desk", Version: -1}, ops.ErrInvalid, ops.CodeInvalidField, "version"},
		{"bad id", ops.StartRequest{Workflow: "desk", ID: ".."}, ops.ErrInvalid, ops.CodeInvalidField, "id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := f.ops.Start(ctx, tt.req)
			requireError(t, err, tt.kind, tt.code, tt.field)
		})
	}
}

func TestOps_Start_DrainingIsUnavailable(t *testing.T) {
	f := newFixture(t, ops.WithDraining(func() bool { return true }))
	_, _, err := f.ops.Start(context.Background(), ops.StartRequest{Workflow: "desk"})
	oe := requireError(t, err, ops.ErrUnavailable, ops.CodeUnavailable, "")
	assert.True(t, oe.Retry, "a shutdown passes: the client may try again")
}

func TestOps_List_PagesNewestFirst(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for k := range 5 {
		_, _, err := f.ops.Start(ctx, ops.StartRequest{Workflow: "desk", ID: fmt.Sprintf("i-%d", k), Input: map[string]any{"mode": "hold"}})
		require.NoError(t, err)
	}
	var (
		got   []string
		pages int
		q     = ops.ListQuery{Limit: 2}
	)
	for range 10 {
		page, err := f.ops.List(ctx, q)
		require.NoError(t, err)
		pages++
		for _, in := range page.Instances {
			got = append(got, in.ID)
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	assert.Equal(t, []string{"i-4", "i-3", "i-2", "i-1", "i-0"}, got)
	assert.Equal(t, 3, pages)

	page, err := f.ops.List(ctx, ops.ListQuery{IDPrefix: "i-3"})
	require.NoError(t, err)
	require.Len(t, page.Instances, 1)
	assert.Equal(t, ops.StatusRunning, page.Instances[0].Status)
	assert.Empty(t, page.Next)
}

func TestOps_List_Refusals(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		q     ops.ListQuery
		field string
	}{
		{"limit too large", ops.ListQuery{Limit: ops.MaxLimit + 1}, "limit"},
		{"negative limit", ops.ListQuery{Limit: -1}, "limit"},
		{"unknown status", ops.ListQuery{Status: "sleeping"}, "status"},
		{"cursor not base64", ops.ListQuery{Cursor: "!!"}, "cursor"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.ops.List(ctx, tt.q)
			requireError(t, err, ops.ErrInvalid, ops.CodeInvalidField, tt.field)
		})
	}
}

func TestOps_Get_WaitingAndUnknown(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sum, _, err := f.ops.Start(ctx, ops.StartRequest{Workflow: "desk", ID: "w"})
	require.NoError(t, err)
	f.waitState(sum.ID, "APPROVAL")
	in, err := f.ops.Get(ctx, "w")
	require.NoError(t, err)
	assert.Equal(t, ops.StatusWaiting, in.Status, "a running instance in a wait state is waiting")
	assert.Nil(t, in.Error)
	assert.NotNil(t, in.Context)

	_, err = f.ops.Get(ctx, "nope")
	requireError(t, err, ops.ErrNotFound, ops.CodeUnknownInstance, "id")
	_, err = f.ops.History(ctx, "nope")
	requireError(t, err, ops.ErrNotFound, ops.CodeUnknownInstance, "id")
	entries, err := f.ops.History(ctx, "w")
	require.NoError(t, err)
	assert.NotEmpty(t, entries)
}

func TestOps_Signal_NotWaitingIsAConflict(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, _, err := f.ops.Start(ctx, ops.StartRequest{Workflow: "desk", ID: "h", Input: map[string]any{"mode": "hold"}})
	require.NoError(t, err)
	_, err = f.ops.Signal(ctx, "h", "approve", nil)
	oe := requireError(t, err, ops.ErrConflict, ops.CodeNotWaiting, "")
	assert.ErrorIs(t, err, engine.ErrUnexpectedSignal, "the engine's refusal is the cause")
	assert.Contains(t, oe.Message, "not waiting for signal")

	_, err = f.ops.Signal(ctx, "nope", "approve", nil)
	requireError(t, err, ops.ErrNotFound, ops.CodeUnknownInstance, "id")

	_, _, err = f.ops.Start(ctx, ops.StartRequest{Workflow: "desk", ID: "w"})
	require.NoError(t, err)
	f.waitState("w", "APPROVAL")
	sum, err := f.ops.Signal(ctx, "w", "approve", map[string]any{"by": "ana"})
	require.NoError(t, err)
	assert.Equal(t, "w", sum.ID)
	f.waitState("w", "DONE")
}

func TestOps_Select_Refusals(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, _, err := f.ops.Start(ctx, ops.StartRequest{Workflow: "desk", ID: "w"})
	require.NoError(t, err)
	f.waitState("w", "APPROVAL")
	_, err = f.ops.Select(ctx, "w", "", "")
	requireError(t, err, ops.ErrInvalid, ops.CodeInvalidField, "agent")
	_, err = f.ops.Select(ctx, "w", "stranger", "")
	requireError(t, err, ops.ErrInvalid, ops.CodeInvalidField, "agent")
	_, err = f.ops.Select(ctx, "w", "boss", "away")
	requireError(t, err, ops.ErrConflict, ops.CodeNoActiveRun, "")
}

func TestOps_Cancel(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, _, err := f.ops.Start(ctx, ops.StartRequest{Workflow: "desk", ID: "w"})
	require.NoError(t, err)
	f.waitState("w", "APPROVAL")

	_, err = f.ops.Cancel(ctx, "w", strings.Repeat("x", ops.MaxCancelReason+1))
	requireError(t, err, ops.ErrInvalid, ops.CodeInvalidField, "reason")

	sum, err := f.ops.Cancel(ctx, "w", "the customer withdrew")
	require.NoError(t, err)
	assert.Equal(t, ops.StatusCancelled, sum.Status)
	in, err := f.ops.Get(ctx, "w")
	require.NoError(t, err)
	assert.Equal(t, ops.StatusCancelled, in.Status)
	assert.Nil(t, in.Error, "a cancel is no failure")
	assert.Equal(t, "the customer withdrew", in.CancelReason)

	_, err = f.ops.Cancel(ctx, "w", "")
	requireError(t, err, ops.ErrConflict, ops.CodeFinished, "")
	_, err = f.ops.Cancel(ctx, "nope", "")
	requireError(t, err, ops.ErrNotFound, ops.CodeUnknownInstance, "id")
}

func TestOps_DeadLetters_PagesNewestFirst(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for k := range 5 {
		reason := "expired"
		if k%2 == 1 {
			reason = "rejected"
		}
		require.NoError(t, f.store.AddDeadLetter(ctx, record.DeadLetter{MessageID: fmt.Sprint(k), Reason: reason, Instance: fmt.Sprint("i-", k%2)}))
	}
	var (
		got []int
		q   = ops.DeadLetterQuery{Limit: 2}
	)
	for range 10 {
		page, err := f.ops.DeadLetters(ctx, q)
		require.NoError(t, err)
		for _, d := range page.DeadLetters {
			got = append(got, d.Seq)
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	assert.Equal(t, []int{5, 4, 3, 2, 1}, got)

	page, err := f.ops.DeadLetters(ctx, ops.DeadLetterQuery{Reason: "rejected"})
	require.NoError(t, err)
	require.Len(t, page.DeadLetters, 2)
	assert.Equal(t, 4, page.DeadLetters[0].Seq)
	page, err = f.ops.DeadLetters(ctx, ops.DeadLetterQuery{Instance: "i-0", Limit: 3})
	require.NoError(t, err)
	assert.Len(t, page.DeadLetters, 3)
	assert.Empty(t, page.Next, "no page after the last")

	_, err = f.ops.DeadLetters(ctx, ops.DeadLetterQuery{Cursor: "x"})
	requireError(t, err, ops.ErrInvalid, ops.CodeInvalidField, "cursor")
}

func TestOps_Workflows_AndDefinition(t *testing.T) {
	f := newFixture(t)
	wfs := f.ops.Workflows()
	require.Len(t, wfs, 1)
	assert.Equal(t, "desk", wfs[0].Name)
	require.Len(t, wfs[0].Versions, 1)
	hash := wfs[0].Versions[0].Workflow.Hash
	def, err := f.ops.Definition(hash)
	require.NoError(t, err)
	assert.Equal(t, 2, def.Version)
	_, err = f.ops.Definition("nope")
	requireError(t, err, ops.ErrNotFound, ops.CodeUnknownVersion, "hash")
}

// elsewhere is a Router for which every instance runs on another process:
// it answers what that process would.
type elsewhere struct{ got []ops.Op }

func (r *elsewhere) NewID() string { return "mine-1" }
func (r *elsewhere) Moves() bool   { return true }
func (r *elsewhere) Route(_ context.Context, op ops.Op) (ops.Result, bool) {
	r.got = append(r.got, op)
	return ops.Result{Err: &ops.Error{Kind: ops.ErrConflict, Code: ops.CodeNotWaiting, Message: "not here"}}, true
}

func TestOps_Router_GetsTheOperationsOnInstances(t *testing.T) {
	r := &elsewhere{}
	f := newFixture(t, ops.WithRouter(r))
	ctx := context.Background()
	_, _, err := f.ops.Start(ctx, ops.StartRequest{Workflow: "desk", Input: map[string]any{"n": 1}})
	require.ErrorIs(t, err, ops.ErrConflict)
	_, err = f.ops.Signal(ctx, "x", "approve", nil)
	require.ErrorIs(t, err, ops.ErrConflict)
	require.Len(t, r.got, 2)
	assert.Equal(t, ops.OpStart, r.got[0].Kind)
	assert.Equal(t, "mine-1", r.got[0].ID, "a start naming no id gets the router's")
	assert.Equal(t, "desk", r.got[0].Start.Workflow)
	assert.Equal(t, ops.Op{Kind: ops.OpSignal, ID: "x", Name: "approve"}, r.got[1])
	_, err = f.store.Instance(ctx, "mine-1")
	assert.ErrorIs(t, err, record.ErrUnknownInstance, "a routed start runs nothing here")
}

// The instance's JSON is the HTTP API's: the hash stays out, a missing
// error is null.
func TestInstance_JSON(t *testing.T) {
	data, err := json.Marshal(ops.Instance{ID: "a", Hash: "h", Context: map[string]any{}})
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(data, &got))
	keys := slices.Sorted(maps.Keys(got))
	assert.Equal(t, []string{"context", "created", "error", "id", "outcome", "pending", "state", "status", "step", "updated", "usage", "version", "workflow"}, keys)
	assert.Nil(t, got["error"])
}

// TestOps_Get_AnswersFinishedWithoutTheStore: with WithFinished, Get
// answers an instance this process finished from it, and any other from
// the store.
func TestOps_Get_AnswersFinishedWithoutTheStore(t *testing.T) {
	var f *fixture
	var asked []string
	f = newFixture(t, ops.WithFinished(func(id string) (record.Snapshot, bool) {
		asked = append(asked, id)
		snap, err := f.store.Instance(context.Background(), id)
		if err != nil || !snap.Status.Finished() {
			return record.Snapshot{}, false
		}
		snap.CancelReason = "as written" // told apart from a read of the store
		return snap, true
	}))
	ctx := context.Background()
	_, _, err := f.ops.Start(ctx, ops.StartRequest{Workflow: "desk", ID: "w"})
	require.NoError(t, err)
	f.waitState("w", "APPROVAL")
	in, err := f.ops.Get(ctx, "w")
	require.NoError(t, err)
	assert.Equal(t, ops.StatusWaiting, in.Status, "a running instance is read from the store")

	_, err = f.ops.Cancel(ctx, "w", "the customer withdrew")
	require.NoError(t, err)
	in, err = f.ops.Get(ctx, "w")
	require.NoError(t, err)
	assert.Equal(t, ops.StatusCancelled, in.Status)
	assert.Equal(t, "as written", in.CancelReason, "a finished instance is answered from WithFinished")

	_, err = f.ops.Get(ctx, "nope")
	requireError(t, err, ops.ErrNotFound, ops.CodeUnknownInstance, "id")
	assert.Equal(t, []string{"w", "w", "nope"}, asked)
}
