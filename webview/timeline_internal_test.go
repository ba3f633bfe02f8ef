package webview

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

func TestTimeline_SaysWhatEachEntryMeans(t *testing.T) {
	entries := []record.Entry{
		{Kind: record.KindStarted, State: "A", Result: map[string]any{"q": 1}},
		{Kind: record.KindDispatch, Step: 1, State: "A", Agent: "a", Attempt: 1, Detail: "do it"},
		{Kind: record.KindAgentRun, Step: 1, State: "A", Agent: "a", Error: "boom", ErrorKind: "timeout"},
		{Kind: record.KindRetry, State: "A", Agent: "a", Attempt: 2, Delay: 2 * time.Second, ErrorKind: "timeout"},
		{Kind: record.KindHandoff, Step: 2, State: "B", From: "a", To: "b", Reason: "rule", Rule: "r1", Detail: "check", Result: map[string]any{"p": "x"}},
		{Kind: record.KindAgentRun, Step: 2, State: "B", Agent: "b", Trigger: "ok", Result: map[string]any{"r": true}},
		{Kind: record.KindOutcome, State: "B", Trigger: "error", ErrorKind: "rate_limited", Retryable: true},
		{Kind: record.KindCondition, State: "B", Rule: "r2", Condition: "result.x > 1", Error: "no field x"},
		{Kind: record.KindRuleFired, State: "B", Rule: "r3", Priority: 5, Next: "C", To: "c"},
		{Kind: record.KindTransition, State: "B", Next: "C"},
		{Kind: record.KindLimitHit, State: "C", Limit: "max_visits", Next: "ESC"},
		{Kind: record.KindWaiting, State: "W", Detail: "go, stop", Delay: time.Hour},
		{Kind: record.KindSignal, State: "W", Trigger: "go", Result: map[string]any{"by": "ops"}},
		{Kind: record.KindSelected, State: "B", From: "b", To: "boss", Detail: "away"},
		{Kind: record.KindJoined, State: "P", Trigger: "partial", Detail: "2 of 3"},
		{Kind: record.KindFailed, State: "C", ErrorKind: "no_rule_matched", Error: "no rule"},
	}
	rows := timeline(entries)
	require.Len(t, rows, len(entries))
	want := []string{
		"started in A",
		"work sent to a (attempt 1)",
		"a failed (timeout)",
		"retry: attempt 2 in 2s (timeout)",
		"hand-off a → b (rule, rule r1)",
		"b reported ok",
		"outcome error (rate_limited, retryable true)",
		"the condition of rule r2 failed and counted as false",
		"rule r3 fired (p5) → C, to c",
		"B → C",
		"limit max_visits hit → ESC",
		"waiting for go, stop (timeout 1h0m0s)",
		"signal go received",
		"a user handed the step from b to boss: away",
		"joined: partial (2 of 3)",
		"failed in C (no_rule_matched)",
	}
	for k, w := range want {
		assert.Equal(t, w, rows[k].Summary, "entry %d (%s)", k, entries[k].Kind)
	}
	// A run carries the task and payload it was sent with.
	assert.Equal(t, "do it", rows[2].Task)
	assert.Equal(t, "check", rows[5].Task)
	assert.Contains(t, rows[5].Input, `"p": "x"`)
	assert.Contains(t, rows[5].Result, `"r": true`)
	assert.Equal(t, "result.x > 1", rows[7].Condition)
	assert.Equal(t, "Data", rows[12].ResultLabel)
	assert.False(t, rows[9].Expand, "a transition has nothing to open")
}

func TestMarkedDiagram_MarksVisitedCurrentAndFailed(t *testing.T) {
	w, err := rules.Parse("m.yaml", []byte(`workflow: m
initial: A
agents:
  a: {}
  b: {}
states:
  A: {agent: a}
  B: {agent: b}
  DONE: {terminal: true}
rules:
  - {id: ab, from: a, trigger: t, next: B}
  - {id: bd, from: b, trigger: t, next: DONE}
`))
	require.NoError(t, err)
	history := []record.Entry{{Kind: record.KindStarted, State: "A"}, {Kind: record.KindTransition, State: "A", Next: "B"}}

	running := markedDiagram(w, marksOf(Instance{State: "B", Status: StatusRunning}, history))
	assert.Contains(t, running, "class A visited\n")
	assert.Contains(t, running, "class B current\n")
	assert.NotContains(t, running, "failed\n    class")

	failed := markedDiagram(w, marksOf(Instance{State: "B", Status: StatusFailed}, history))
	assert.Contains(t, failed, "class B failed\n")
	assert.NotContains(t, failed, "class B current")

	// A state the workflow does not have (a history from another version)
	// is left out of the diagram.
	odd := markedDiagram(w, marksOf(Instance{State: "GONE", Status: StatusRunning}, history))
	assert.False(t, strings.Contains(odd, "GONE"), odd)
}
