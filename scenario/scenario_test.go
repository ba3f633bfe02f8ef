package scenario_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

func parse(t *testing.T, src string) (*scenario.Scenario, error) {
	t.Helper()
	return scenario.Parse("testdata/s.yaml", []byte(src))
}

func TestParse_Errors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"malformed yaml", "scenario: x\nworkflow: [\n", []string{"testdata/s.yaml:2:1: malformed yaml: "}},
		{"missing workflow", "scenario: x\n", []string{`testdata/s.yaml:1:1: missing required key "workflow" in scenario`}},
		{"near miss", "scenario: x\nworkflow: flow.yaml\nexpct: {}\n", []string{`testdata/s.yaml:3:1: unknown key "expct" in scenario (did you mean "expect"?)`}},
		{"reply needs one kind", "scenario: x\nworkflow: f\nagents:\n  a:\n    - {trigger: t, error: boom}\n", []string{"testdata/s.yaml:5:7: reply of a needs exactly one of trigger, error, reject, handoff or select"}},
		{"bad delay", "scenario: x\nworkflow: f\nagents:\n  a:\n    - {trigger: t, delay: soon}\n", []string{`testdata/s.yaml:5:27: delay "soon" is not a duration`}},
		{"retryable without error", "scenario: x\nworkflow: f\nagents:\n  a:\n    - {trigger: t, retryable: false}\n", []string{"testdata/s.yaml:5:31: retryable goes with error"}},
		{"bad status", "scenario: x\nworkflow: f\nexpect: {status: done}\n", []string{`testdata/s.yaml:3:18: status must be completed or failed, got "done"`}},
		{"every problem at once", "scenario: x\nworkflow: f\nexpect: {status: done, states: A}\nagents: []\n", []string{
			"testdata/s.yaml:3:18: status must be completed or failed",
			"testdata/s.yaml:3:32: states must be a list",
			"testdata/s.yaml:4:9: agents must be a mapping",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.src)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			var se *scenario.Error
			assert.True(t, errors.As(err, &se), "errors are *scenario.Error, got %T", err)
		})
	}
}

func TestParse_Defaults(t *testing.T) {
	s, err := parse(t, "scenario: x\nworkflow: flow.yaml\nagents:\n  a:\n    - {error: boom}\n")
	require.NoError(t, err)
	assert.Equal(t, "completed", s.Expect.Status)
	assert.Equal(t, "testdata/flow.yaml", s.Workflow, "the workflow path is relative to the scenario")
	assert.True(t, s.Agents["a"][0].Retryable, "errors are retryable unless said otherwise")
	assert.NotNil(t, s.Input)
	assert.Nil(t, s.Expect.States, "unset expectations are not checked")
}

func run(t *testing.T, src string) *scenario.Report {
	t.Helper()
	s, err := parse(t, src)
	require.NoError(t, err)
	rep, err := scenario.Run(context.Background(), s, nil)
	require.NoError(t, err)
	return rep
}

const header = "scenario: x\nworkflow: flow.yaml\n"

func TestRun_Verdicts(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		failures []string // substrings, one per expected failure; none: the scenario passes
	}{
		{"passes", header + "agents:\n  a: [{trigger: done}]\n  b: [{trigger: done}]\nexpect: {outcome: OK, states: [A, B, OK], handoffs: [a->b]}\n", nil},
		{"retry then success", header + "agents:\n  a: [{error: x}, {trigger: done}]\n  b: [{trigger: done}]\nexpect: {outcome: OK}\n", nil},
		{"retryable false skips the retry", header + "agents:\n  a: [{error: x, retryable: false}]\nexpect: {outcome: BAD}\n", nil},
		{"reject", header + "agents:\n  a: [{reject: busy}]\nexpect: {outcome: BAD}\n", nil},
		{"timeout from a delay", header + "agents:\n  a: [{trigger: done}]\n  b: [{trigger: done, delay: 11s}]\nexpect: {outcome: BAD}\n", nil},
		{"delay within the timeout", header + "agents:\n  a: [{trigger: done}]\n  b: [{trigger: done, delay: 9s}]\nexpect: {outcome: OK}\n", nil},
		{"wrong outcome", header + "agents:\n  a: [{trigger: done}]\n  b: [{trigger: done}]\nexpect: {outcome: BAD}\n", []string{`outcome: got "OK", want "BAD"`}},
		{"wrong path", header + "agents:\n  a: [{trigger: done}]\n  b: [{trigger: done}]\nexpect: {states: [A, OK]}\n", []string{"states: got [A, B, OK], want [A, OK]"}},
		{"wrong handoffs", header + "agents:\n  a: [{trigger: done}]\n  b: [{trigger: done}]\nexpect: {handoffs: []}\n", []string{"handoffs: got [a->b], want []"}},
		{"no reply left", header + "agents:\n  a: [{trigger: done}]\n", []string{"agent b has no reply left for step 2 (state B)", "status: got failed, want completed"}},
		{"reply left unconsumed", header + "agents:\n  a: [{trigger: done}, {trigger: done}]\n  b: [{trigger: done}]\n", []string{"agent a: reply at line 4 left unconsumed"}},
		{"expected failure", header + "agents:\n  a: [{trigger: nope}]\nexpect: {status: failed, error: no rule matched}\n", nil},
		{"error text mismatch", header + "agents:\n  a: [{trigger: nope}]\nexpect: {status: failed, error: limit}\n", []string{`error: got "engine: instance`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := run(t, tt.src)
			if len(tt.failures) == 0 {
				assert.True(t, rep.Passed(), "failures: %s", strings.Join(rep.Failures, "; "))
				return
			}
			all := strings.Join(rep.Failures, "\n")
			for _, f := range tt.failures {
				assert.Contains(t, all, f)
			}
		})
	}
}

func TestRun_Deterministic(t *testing.T) {
	src := header + "agents:\n  a: [{error: x}, {trigger: done, delay: 3s}]\n  b: [{trigger: done}]\n"
	trace := func() string {
		rep := run(t, src)
		data, err := json.Marshal(rep.History)
		require.NoError(t, err)
		return string(data)
	}
	first := trace()
	assert.Equal(t, first, trace(), "two replays must give byte-identical traces")
	assert.Contains(t, first, `"time":"2025-01-01T00:00:04Z"`, "backoff and delay advance the scenario clock")
}

func TestRun_StepTable(t *testing.T) {
	rep := run(t, header+"agents:\n  a: [{error: boom}, {trigger: done}]\n  b: [{trigger: done}]\n")
	want := []scenario.Row{
		{Step: 1, State: "A", Agent: "a", Trigger: "error: boom", Next: "retry in 1s"},
		{Step: 2, State: "A", Agent: "a", Trigger: "done", Rule: "go", Next: "B", Handoff: "a->b"},
		{Step: 3, State: "B", Agent: "b", Trigger: "done", Rule: "finish", Next: "OK"},
	}
	assert.Equal(t, want, rep.Steps)
}

// FuzzParse feeds arbitrary bytes to the scenario loader, then checks what
// loads against a workflow: neither may panic, and every problem is a
// positioned *scenario.Error. The seeds are the corpus of broken scenarios
// and every example scenario.
func FuzzParse(f *testing.F) {
	f.Add([]byte(header + "agents:\n  a: [{trigger: done}]\nexpect: {outcome: OK}\n"))
	f.Add([]byte("scenario: x\nworkflow: [\n"))
	f.Add([]byte("agents: {a: [{error: x, retryable: false, delay: 1s}]}\n"))
	for _, pattern := range []string{"testdata/invalid/*.yaml", "../examples/*/scenarios/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if src, err := os.ReadFile(file); err == nil {
				f.Add(src)
			}
		}
	}
	w, err := rules.Load("testdata/airline/workflow.yaml")
	require.NoError(f, err)
	positioned := func(t *testing.T, err error) {
		var se *scenario.Error
		if !errors.As(err, &se) {
			t.Fatalf("got %T, want *scenario.Error", err)
		}
		if se.Line < 1 || se.Col < 1 {
			t.Fatalf("error without a position: %v", err)
		}
	}
	f.Add([]byte(header + "agents: {a: [{error: x, kind: rate_limited}]}\nsignals: [{signal: go, data: {by: ana}, delay: 2h}]\nexpect: {steps: 2, condition_errors: true, context: {k: [1, {a: b}]}}\n"))
	f.Add([]byte(header + "signals: [{signal: [x]}, {data: 3}, 7]\nexpect: {steps: -1, condition_errors: maybe}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := scenario.Parse("f.yaml", src)
		if err != nil {
			positioned(t, err)
			return
		}
		if s == nil {
			t.Fatal("nil scenario without an error")
		}
		if err := scenario.Check(s, w); err != nil {
			positioned(t, err)
		}
	})
}

func TestRunFrom_StartsTheScenarioClockThere(t *testing.T) {
	s, err := parse(t, header+"agents:\n  a: [{trigger: done, delay: 2s}]\n  b: [{trigger: done}]\n")
	require.NoError(t, err)
	start := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	rep, err := scenario.RunFrom(context.Background(), s, nil, start)
	require.NoError(t, err)
	require.NotEmpty(t, rep.History)
	assert.Equal(t, start, rep.History[0].Time, "the first entry is at the start")
	assert.Equal(t, start.Add(2*time.Second), rep.History[len(rep.History)-1].Time, "delays still pass on the simulated clock")
	assert.Equal(t, 2*time.Second, rep.Duration)
}
