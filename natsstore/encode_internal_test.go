package natsstore

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// requireAsMarshal checks that appendStep writes what json.Marshal writes
// for the same step, or leaves it to json.Marshal; leaves says which is
// wanted (the fuzz test takes both).
func requireAsMarshal(t *testing.T, snap record.Snapshot, entries []record.Entry, outbox []record.Outgoing) bool {
	t.Helper()
	want, werr := json.Marshal(stepRecord{Format: format, Snapshot: snap, Entries: entries, Outbox: outbox})
	got, ok := appendStep(nil, snap, entries, outbox)
	if !ok {
		return false
	}
	require.NoError(t, werr, "appendStep wrote a step json.Marshal refuses")
	require.Equal(t, string(want), string(got))
	return true
}

// fullStep fills every field of a step.
func fullStep() (record.Snapshot, []record.Entry, []record.Outgoing) {
	at := time.Date(2026, 11, 27, 16, 20, 1, 123456789, time.UTC)
	snap := record.Snapshot{
		ID: "order-<1>&", Workflow: "refund", Version: 3, Hash: "h", Status: record.StatusFailed, State: "B",
		Outcome: "done", Error: "boom\n\"x\"", CancelReason: "why\u2028", Step: 4, Attempt: 2,
		Visits: map[string]int{"B": 2, "A": 1}, Input: map[string]any{"n": 1.5, "s": "x", "l": []any{true, nil}},
		Context: map[string]any{"z": map[string]any{"k": "v"}, "a": -0.0}, Created: at, Updated: at.Add(time.Second).In(time.FixedZone("x", 5*3600+1800)),
		Commits: 5,
		Usage: registry.Ledger{
			Totals: registry.Totals{InputTokens: 10, OutputTokens: 20, Tokens: 30, Cost: 0.000001},
			Agents: registry.AgentTotals{{Agent: "a", Totals: registry.Totals{InputTokens: 2, OutputTokens: 3, Tokens: 5, Cost: 0.25}}, {Agent: "b<", Totals: registry.Totals{Cost: 1e21}}},
			Visit:  registry.Totals{InputTokens: 4, OutputTokens: 6, Tokens: 10, Cost: 2},
		},
	}
	entries := []record.Entry{{
		Seq: 1, Time: at, Kind: record.KindAgentRun, Step: 2, Attempt: 1, State: "A", Agent: "a", Trigger: "t", Rule: "r",
		Priority: -1, Condition: "c", From: "f", To: "t", Next: "n", HandoffID: "h", Result: map[string]any{"x": 1.0},
		Error: "e", Retryable: true, ErrorKind: "k", Limit: "l", Reason: "r", Detail: "d", Delay: time.Minute, Index: 3,
		Usage: registry.Usage{InputTokens: 1, OutputTokens: 2, Cost: 0.5, Model: "m"},
	}, {Seq: 2, Time: at, Kind: record.KindTransition, Usage: registry.Usage{Model: "only"}}}
	outbox := []record.Outgoing{{
		Key: "order-1:4", Kind: "work", Run: "state", Step: 4, Attempt: 2, State: "B", To: "b", From: "a", HandoffID: "h",
		Reason: "rule", Explanation: "x", Task: "t", Priority: 2, Rule: "r", Previous: map[string]any{"p": 1.0},
		Constraints: map[string]any{"c": "d"}, Payload: map[string]any{"q": []any{}}, Delegator: "d", ReturnControl: true,
		Returned: true, Index: 1, Created: at,
	}}
	return snap, entries, outbox
}

func TestAppendStep_AsMarshal(t *testing.T) {
	snap, entries, outbox := fullStep()
	require.True(t, requireAsMarshal(t, snap, entries, outbox), "every field")
	require.True(t, requireAsMarshal(t, record.Snapshot{}, nil, nil), "every field empty")
	require.True(t, requireAsMarshal(t, snap, []record.Entry{}, []record.Outgoing{}), "empty slices are left out")

	empty := snap
	empty.Visits, empty.Input, empty.Context = map[string]int{}, map[string]any{}, map[string]any{}
	empty.Usage = registry.Ledger{Agents: registry.AgentTotals{}}
	require.True(t, requireAsMarshal(t, empty, nil, nil), "empty maps, and a ledger whose agents are empty but not nil")
	empty.Usage = registry.Ledger{Totals: registry.Totals{Cost: math.Copysign(0, -1)}}
	require.True(t, requireAsMarshal(t, empty, nil, nil), "a ledger whose cost is -0 is zero")
	entries[0].Usage = registry.Usage{Cost: math.Copysign(0, -1)}
	require.True(t, requireAsMarshal(t, empty, entries, nil), "a run's usage of -0 is zero")
}

func TestAppendStep_LeavesToMarshal(t *testing.T) {
	for name, change := range map[string]func(*record.Snapshot, []record.Entry){
		"a NaN cost":        func(s *record.Snapshot, _ []record.Entry) { s.Usage.Cost = math.NaN() },
		"an infinite usage": func(_ *record.Snapshot, en []record.Entry) { en[0].Usage.Cost = math.Inf(1) },
		"a year past 9999":  func(s *record.Snapshot, _ []record.Entry) { s.Updated = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
		"a zone past 23 hours": func(_ *record.Snapshot, en []record.Entry) {
			en[1].Time = en[1].Time.In(time.FixedZone("far", 24*3600))
		},
		"a function": func(s *record.Snapshot, _ []record.Entry) { s.Context["f"] = func() {} },
		"agents out of order": func(s *record.Snapshot, _ []record.Entry) {
			s.Usage.Agents = registry.AgentTotals{{Agent: "b"}, {Agent: "a"}}
		},
		"an agent twice": func(s *record.Snapshot, _ []record.Entry) {
			s.Usage.Agents = registry.AgentTotals{{Agent: "a"}, {Agent: "a", Totals: registry.Totals{Tokens: 2}}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			snap, entries, outbox := fullStep()
			change(&snap, entries)
			require.False(t, requireAsMarshal(t, snap, entries, outbox))
			// encodeStep still writes json.Marshal's form, or its error.
			want, werr := json.Marshal(stepRecord{Format: format, Snapshot: snap, Entries: entries, Outbox: outbox})
			got, err := encodeStep(snap, entries, outbox)
			if werr != nil {
				var enc *EncodeError
				require.ErrorAs(t, err, &enc)
				return
			}
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		})
	}
}

// FuzzAppendStep holds appendStep equal to json.Marshal: strings of any
// bytes, numbers, times and JSON values in every field that takes them.
func FuzzAppendStep(f *testing.F) {
	f.Add("order-1", "A", "<&>\u2028", `{"a":[1,"x",null,{"b":true}],"c":1e-7}`, 3, int64(1700000000123456789), 0.5, int64(7), true)
	f.Add("", "", "\xff\x00", `null`, 0, int64(0), math.Copysign(0, -1), int64(0), false)
	f.Add("z", "y", "x", `{"":-0.0,"k":123456789012345678901234567890}`, -1, int64(-62135596800000000), 1e21, int64(-5), true)
	f.Fuzz(func(t *testing.T, id, state, text, js string, n int, nanos int64, cost float64, tokens int64, flag bool) {
		var m map[string]any
		if json.Unmarshal([]byte(js), &m) != nil {
			m = map[string]any{"v": js}
		}
		at := time.Unix(0, nanos)
		if flag {
			at = at.UTC()
		}
		snap := record.Snapshot{
			ID: id, Workflow: text, Version: n, Hash: state, Status: record.Status(text), State: state,
			Outcome: text, Error: id, CancelReason: state, Step: n, Attempt: -n,
			Visits: map[string]int{state: n, text: 1}, Input: m, Context: m, Created: at, Updated: at, Commits: n,
			Usage: registry.Ledger{
				Totals: registry.Totals{InputTokens: tokens, Tokens: -tokens, Cost: cost},
				Agents: registry.AgentTotals{{Agent: id, Totals: registry.Totals{Cost: cost}}},
			},
		}
		if !flag {
			snap.Usage = registry.Ledger{Visit: registry.Totals{OutputTokens: tokens, Cost: cost}}
		}
		entries := []record.Entry{{
			Seq: n, Time: at, Kind: record.Kind(state), Step: n, State: text, Agent: id, Result: m, Retryable: flag,
			Detail: text, Delay: time.Duration(nanos), Index: n, Usage: registry.Usage{OutputTokens: tokens, Cost: cost, Model: text},
		}}
		outbox := []record.Outgoing{{
			Key: id, Kind: record.OutgoingKind(state), Step: n, State: state, To: text, Payload: m, Previous: m,
			ReturnControl: flag, Created: at,
		}}
		requireAsMarshal(t, snap, entries, outbox)
		requireAsMarshal(t, snap, nil, nil)
	})
}

// typicalStep is a step of a four-step workflow: a run's end and the
// next state's work.
func typicalStep() (record.Snapshot, []record.Entry, []record.Outgoing) {
	at := time.Date(2026, 11, 27, 16, 20, 1, 123456789, time.UTC)
	snap := record.Snapshot{
		ID: "01JDZK3W4Q7M2N8P5R6S9T0V1X", Workflow: "chain4", Version: 1, Hash: "3f1c9a7e5b2d", Status: record.StatusRunning,
		State: "C", Outcome: "done", Step: 3, Attempt: 1, Visits: map[string]int{"A": 1, "B": 1, "C": 1},
		Input: map[string]any{}, Context: map[string]any{"order": "o-1", "amount": 12.5}, Created: at, Updated: at, Commits: 3,
	}
	entries := []record.Entry{
		{Seq: 7, Time: at, Kind: record.KindAgentRun, Step: 2, Attempt: 1, State: "B", Agent: "b", Trigger: "done"},
		{Seq: 8, Time: at, Kind: record.KindOutcome, Step: 2, State: "B", Agent: "b", Trigger: "done", Result: map[string]any{}},
		{Seq: 9, Time: at, Kind: record.KindRuleFired, Step: 2, State: "B", Rule: "bc", Next: "C"},
		{Seq: 10, Time: at, Kind: record.KindTransition, Step: 3, From: "B", To: "C", Trigger: "done"},
		{Seq: 11, Time: at, Kind: record.KindDispatch, Step: 3, Attempt: 1, State: "C", Agent: "c"},
	}
	outbox := []record.Outgoing{{Key: snap.ID + ":3", Kind: "work", Run: "state", Step: 3, Attempt: 1, State: "C", To: "c", Created: at}}
	return snap, entries, outbox
}

// BenchmarkEncodeStep encodes a typical step with json.Marshal
// (reflection) and with encodeStep.
func BenchmarkEncodeStep(b *testing.B) {
	snap, entries, outbox := typicalStep()
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(stepRecord{Format: format, Snapshot: snap, Entries: entries, Outbox: outbox}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeStep(snap, entries, outbox); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestFullStep_FillsEveryField holds fullStep complete: the hand encoder
// and decoder name each field again, and the tests that hold them equal to
// encoding/json (this file's and decode_internal_test.go's) only see a
// field fullStep sets. A field added to a record type fails here until
// fullStep sets it, and then there until both codecs carry it.
func TestFullStep_FillsEveryField(t *testing.T) {
	snap, entries, outbox := fullStep()
	requireFilled(t, "Snapshot", reflect.ValueOf(snap))
	requireFilled(t, "Entry", reflect.ValueOf(entries[0]))
	requireFilled(t, "Outgoing", reflect.ValueOf(outbox[0]))
}

// requireFilled fails for every exported field of the struct v, and of
// the structs within it, that holds its zero value.
func requireFilled(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f, fv := v.Type().Field(i), v.Field(i)
		if !f.IsExported() {
			continue
		}
		name := path + "." + f.Name
		switch {
		case fv.IsZero():
			t.Errorf("fullStep leaves %s empty: set it, so that the codec tests see it", name)
		case fv.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Time]():
			requireFilled(t, name, fv)
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct:
			requireFilled(t, name+"[0]", fv.Index(0))
		}
	}
}
