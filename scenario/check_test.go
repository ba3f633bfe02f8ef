package scenario_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/invalid")

// diagnose loads a scenario and checks it against its workflow, as
// `wfrun run` does, and renders every problem, one per line.
func diagnose(t *testing.T, path string) string {
	t.Helper()
	s, err := scenario.Load(path)
	if err == nil {
		w, werr := rules.LoadBeside(s.Workflow)
		require.NoError(t, werr, "the corpus's workflows load")
		err = scenario.Check(s, w)
	}
	if err == nil {
		return ""
	}
	return err.Error() + "\n"
}

// TestCheck_InvalidCorpus checks every scenario under testdata/invalid
// against its .golden file: each problem's line, column and text. Run with
// -update to rewrite the golden files, then review the diff.
func TestCheck_InvalidCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 10)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			got := diagnose(t, f)
			require.NotEmpty(t, got, "got no problem, want at least one")
			golden := strings.TrimSuffix(f, ".yaml") + ".golden"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -update")
			assert.Equal(t, string(want), got)
		})
	}
}

// TestCheck_CorpusCoversEveryMistake names each scenario mistake with the
// corpus file that shows it and a piece of what must be said.
func TestCheck_CorpusCoversEveryMistake(t *testing.T) {
	kinds := []struct{ kind, file, want string }{
		{"unknown agent, near miss", "unknown_agent", `unknown_agent.yaml:5:3: agent "seat_bookng" is not in workflow airline (did you mean "seat_booking"?)`},
		{"unknown agent, no near miss", "unknown_agent", `unknown_agent.yaml:9:3: agent "caterer" is not in workflow airline`},
		{"trigger typo", "unknown_trigger", `unknown_trigger.yaml:6:17: trigger "bookd" of agent seat_booking matches no rule (did you mean "booked"?)`},
		{"trigger typo in a block reply", "unknown_trigger", `unknown_trigger.yaml:8:16: trigger "payed" of agent payment matches no rule (did you mean "paid"?)`},
		{"unknown outcome", "unknown_states", `unknown_states.yaml:8:12: outcome "RESOLVD" is no state of workflow airline (did you mean "RESOLVED"?)`},
		{"outcome not terminal", "outcome_not_terminal", `outcome_not_terminal.yaml:8:12: outcome "PAYING" is not a terminal state of workflow airline`},
		{"unknown state", "unknown_states", `unknown_states.yaml:9:21: state "PAYNG" is not in workflow airline (did you mean "PAYING"?)`},
		{"unknown hand-off agent", "unknown_states", `unknown_states.yaml:10:14: agent "paymnt" is not in workflow airline (did you mean "payment"?)`},
		{"malformed hand-off", "unknown_states", `unknown_states.yaml:10:36: hand-off "seat_booking payment" must read from->to`},
		{"reserved trigger", "reserved_trigger", `reserved_trigger.yaml:6:17: trigger "error" is reported by the engine, never by an agent: script a failure with {error: message}`},
		{"dynamic hand-off target typo", "unknown_handoff_target", `unknown_handoff_target.yaml:6:22: agent "paymnt" is not in workflow airline (did you mean "payment"?)`},
		{"selected agent typo", "unknown_handoff_target", `unknown_handoff_target.yaml:7:16: agent "suport" is not in workflow airline (did you mean "support"?)`},
		{"unknown key", "unknown_keys", `unknown_keys.yaml:9:1: unknown key "expct" in scenario (did you mean "expect"?)`},
		{"unknown reply key", "unknown_keys", `unknown_keys.yaml:8:23: unknown key "dealy" in reply of payment (did you mean "delay"?)`},
		{"bad delay", "bad_values", `bad_values.yaml:6:32: delay "soon" is not a duration`},
		{"yes is not a bool", "bad_values", `bad_values.yaml:11:32: retryable must be true or false`},
		{"reply with two kinds", "bad_values", `bad_values.yaml:7:7: reply of seat_booking needs exactly one of trigger, error, reject, handoff or select`},
		{"missing workflow", "missing_required", `missing_required.yaml:2:1: missing required key "workflow" in scenario`},
		{"workflow given as a scenario", "workflow_not_scenario", `workflow_not_scenario.yaml:1:1: this file is a workflow, not a scenario`},
		{"tab", "yaml_tab", `yaml_tab.yaml:8:1: malformed yaml: a tab indents this line`},
		{"indentation", "yaml_indent", `yaml_indent.yaml:8:6: malformed yaml: the indentation of this line does not fit`},
		{"stray colon", "yaml_stray_colon", `yaml_stray_colon.yaml:2:18: malformed yaml: a stray ':' here`},
		{"empty file", "empty", `empty.yaml:1:1: empty scenario`},
		{"input of the wrong type", "typed_input", `typed_input.yaml:3:19: input field "order_id" must be a string, got the number 12345: workflow typed declares order_id: string`},
		{"input field typo", "typed_input", `typed_input.yaml:3:35: input field "ammount" is not declared by workflow typed (did you mean "amount"?)`},
		{"input missing a field", "typed_input_missing", `typed_input_missing.yaml:4:3: input misses field "amount", which workflow typed declares as number`},
	}
	for _, k := range kinds {
		got := diagnose(t, "testdata/invalid/"+k.file+".yaml")
		assert.Contains(t, got, k.want, "%s", k.kind)
	}
}

// TestCheck_ExamplesAreClean checks every scenario in the repository against
// its workflow: none may trip the checks meant for typos.
func TestCheck_ExamplesAreClean(t *testing.T) {
	files, err := filepath.Glob("../examples/*/scenarios/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		assert.Empty(t, diagnose(t, f), f)
	}
}

// TestCheck_ScenarioBuiltInGo: a Scenario made without Parse has no
// positions; its problems are still reported, at 1:1.
func TestCheck_ScenarioBuiltInGo(t *testing.T) {
	w, err := rules.Load("testdata/airline/workflow.yaml")
	require.NoError(t, err)
	s := &scenario.Scenario{
		File:   "built.yaml",
		Agents: map[string][]scenario.Reply{"seat_bookng": {{Trigger: "booked"}}},
		Expect: scenario.Expect{Outcome: "RESOLVD", States: []string{"PAYNG"}, Handoffs: []string{"a-b"}},
	}
	err = scenario.Check(s, w)
	require.Error(t, err)
	for _, want := range []string{
		`built.yaml:1:1: agent "seat_bookng" is not in workflow airline (did you mean "seat_booking"?)`,
		`built.yaml:1:1: outcome "RESOLVD" is no state of workflow airline (did you mean "RESOLVED"?)`,
		`built.yaml:1:1: state "PAYNG" is not in workflow airline (did you mean "PAYING"?)`,
		`built.yaml:1:1: hand-off "a-b" must read from->to`,
	} {
		assert.Contains(t, err.Error(), want)
	}
}
