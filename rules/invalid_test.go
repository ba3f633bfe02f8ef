package rules_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/rules"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/invalid")

// diagnose loads a corpus file and renders its diagnostics, errors or (for
// a workflow that loads) warnings, one per line.
func diagnose(t *testing.T, path string) string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := rules.Parse(filepath.Base(path), src)
	var ds []rules.Diagnostic
	switch {
	case err != nil:
		var le *rules.LoadError
		if !errors.As(err, &le) || !errors.Is(err, rules.ErrInvalidWorkflow) {
			t.Fatalf("got %T %v, want *LoadError", err, err)
		}
		if w != nil {
			t.Error("got a workflow with errors, want nil")
		}
		ds = le.Diagnostics
	default:
		ds = w.Warnings
	}
	var b strings.Builder
	for _, d := range ds {
		if d.Line < 1 || d.Col < 1 {
			t.Errorf("got unpositioned diagnostic %v", d)
		}
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// TestLoad_InvalidCorpus checks every file under testdata/invalid against its
// .golden file: every diagnostic with its exact line, column and message.
// Run with -update to rewrite the golden files, then review the diff.
func TestLoad_InvalidCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("got %d invalid workflows, want at least 30", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			got := diagnose(t, f)
			if got == "" {
				t.Fatal("got no diagnostic, want at least one")
			}
			golden := strings.TrimSuffix(f, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if got != string(want) {
				t.Errorf("diagnostics differ\ngot:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestLoad_InvalidCorpusCoversEveryKind lists each load error and lint
// warning kind of the loader with a corpus file and a
// piece of the diagnostic that file must produce.
func TestLoad_InvalidCorpusCoversEveryKind(t *testing.T) {
	kinds := []struct{ kind, file, want string }{
		{"malformed yaml: unclosed construct", "yaml_unclosed_flow", "4:1: malformed yaml: a '{' opened on this line is not closed"},
		{"malformed yaml: tab", "yaml_tab_indent", "5:1: malformed yaml: a tab indents this line; YAML indents with spaces only (parser: found character that cannot start any token)"},
		{"malformed yaml: tab deep in a block", "yaml_tab_deep", "43:1: malformed yaml: a tab indents this line"},
		{"malformed yaml: indentation under a value", "yaml_bad_indent", "4:3: malformed yaml: this line is indented under a key that already has a value"},
		{"malformed yaml: indentation deep in a block", "yaml_indent_deep", "59:4: malformed yaml: the indentation of this line does not fit the block above it"},
		{"malformed yaml: key at the dashes' indentation", "yaml_dash_missing", "69:3: malformed yaml: the indentation of this line does not fit"},
		{"malformed yaml: stray colon", "yaml_stray_colon", "62:28: malformed yaml: a stray ':' here"},
		{"malformed yaml: unclosed quote", "yaml_unclosed_quote", "39:13: malformed yaml: a quoted value opened on this line is not closed"},
		{"malformed yaml: unknown anchor", "yaml_unknown_anchor", "5:6: malformed yaml: the alias *missing names no anchor"},
		{"a scenario instead of a workflow", "scenario_not_workflow", "2:1: this file is a scenario, not a workflow"},
		{"empty file", "empty", "1:1: empty workflow file"},
		{"document not a mapping", "not_a_mapping", "workflow file must be a mapping"},
		{"unknown key", "unknown_keys", `5:1: unknown key "owner"`},
		{"unknown key with suggestion", "unknown_keys", `unknown key "prority" (did you mean "priority"?)`},
		{"near miss of a missing required key", "near_miss_required", `11:5: unknown key "form" (did you mean "from"?)`},
		{"missing required key", "missing_required_top", `2:1: missing required key "workflow"`},
		{"missing required rule key", "missing_required_rule", `missing required key "next" in rule "no_next"`},
		{"invalid name", "bad_names", `invalid workflow name "Refund Flow"`},
		{"invalid duration", "bad_durations", `invalid timeout "3x"`},
		{"duration not positive", "bad_durations", `timeout must be positive, got "0s"`},
		{"unknown priority name", "bad_priorities", `unknown priority "hihg" (did you mean "high"?)`},
		{"priority below 1", "bad_priorities", "priority must be at least 1, got 0"},
		{"negative count", "bad_counts", "queue must not be negative, got -1"},
		{"count below minimum", "bad_counts", "max_visits must be at least 1, got 0"},
		{"wrong type", "bad_types", "system must be true or false"},
		{"fraction out of range", "bad_fractions", "expertise must be a number in [0, 1], got 1.5"},
		{"unknown state", "unknown_next", `unknown state "REFUNDNG" (did you mean "REFUNDING"?)`},
		{"unknown initial state", "unknown_initial", `unknown initial state "VALIDATNG" (did you mean "VALIDATING"?)`},
		{"unknown on_limit state", "unknown_initial", `unknown on_limit state "FAILD" (did you mean "FAILED"?)`},
		{"unknown agent", "unknown_agents", `unknown agent "seler" (did you mean "seller"?)`},
		{"unknown state in visits", "unknown_visits_state", `12:23: unknown state "SEARCHNG" in visits (did you mean "SEARCHING"?)`},
		{"duplicate rule id", "duplicate_ids", `16:10: duplicate rule id "r1" (first at 14:10)`},
		{"duplicate agent id", "duplicate_ids", `7:3: duplicate key "a" (first at 5:3)`},
		{"agent and state share a name", "shared_namespace", `state "Z" has the name of agent "Z"`},
		{"from owns no state", "from_owns_no_state", `agent "idle" owns no state`},
		{"condition does not compile", "condition_syntax", "condition: unexpected token"},
		{"condition with an unknown name", "condition_unknown_name", `13:37: condition: unknown name reslt (did you mean "result"?)`},
		{"condition known not bool", "condition_not_bool", "condition: expected bool, but got int"},
		{"task known not string", "task_context_errors", "task: expected string, but got int"},
		{"state with none of agent, agents, wait, foreach, terminal", "state_without_owner", `state "LIMBO" has none of agent, agents, wait, foreach, workflow or terminal`},
		{"wait state with an agent", "wait_errors", `state "BOTH" has both wait and an agent`},
		{"wait trigger that is not a signal", "wait_errors", `not "aproved" (did you mean "approved"?)`},
		{"backoff object", "retry_policy_errors", "backoff.rate must be a number from 1 to 100, got 0.5"},
		{"retry kinds", "retry_policy_errors", `kind "timeout" is both in retry.on and retry.except`},
		{"workflow state", "child_errors", `workflow state "KYC" reports its child's terminal states, error and timeout, not "joined"`},
		{"foreach state", "foreach_errors", `foreach state "EACH" only reports joined, partial, error, not "done"`},
		{"warning: foreach items declared as no list", "lint_foreach_typed", `warning: foreach items of state "EACH" is a string, not a list`},
		{"warning: foreach items that are not a list", "lint_foreach_items", `warning: foreach items of state "COUNT" is an int, not a list`},
		{"warning: a rule on the timeout of a wait without one", "lint_wait_uncovered", `warning: rule "never" can never fire on timeout: wait state "APPROVAL" has no timeout`},
		{"terminal state with an agent, timeout or retry", "terminal_with_agent", `terminal state "DONE" has a timeout`},
		{"non-terminal state with no outgoing rule", "no_outgoing_rule", `non-terminal state "STUCK" has no outgoing rule`},
		{"terminal state with outgoing rules", "terminal_outgoing", `terminal state "DONE" has outgoing rule "r2"`},
		{"to naming another agent", "to_errors", `to "monitor" does not own next state "B"`},
		{"to into a parallel state", "to_errors", `a rule into parallel state "P" must omit to`},
		{"parallel trigger outside a parallel state", "reserved_triggers", `trigger "joined" is only reported by parallel and foreach states`},
		{"join strategy", "parallel_errors", `unknown join strategy "sum"`},
		{"warning: unreachable state", "lint_unreachable", `warning: state "ORPHAN" is unreachable`},
		{"warning: rule that can never fire", "lint_never_fires", `warning: rule "shadowed" can never fire`},
		{"warning: rules that may both match", "lint_ambiguous", `warning: rules "big" and "vip" may both match`},
		{"warning: cycle bound only by default limits", "lint_cycle", "warning: cycle A -> B -> A is bounded only by the default limits"},
	}
	for _, k := range kinds {
		got := diagnose(t, "testdata/invalid/"+k.file+".yaml")
		if !strings.Contains(got, k.want) {
			t.Errorf("%s: %s.yaml gave\n%s\nwant a diagnostic containing %q", k.kind, k.file, got, k.want)
		}
	}
}
