package check_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/rules"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// corpus lists the workflows with planted defects, one directory each.
func corpus(t testing.TB) []string {
	t.Helper()
	dirs, err := filepath.Glob("testdata/corpus/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	return dirs
}

func load(t testing.TB, path string) *rules.Workflow {
	t.Helper()
	w, err := rules.LoadBeside(path)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return w
}

// TestCheck_Golden compares the text and JSON reports of every workflow of
// the corpus with testdata/golden. Run with -update to rewrite them, then
// review the diff.
func TestCheck_Golden(t *testing.T) {
	for _, dir := range corpus(t) {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			r := check.Check(load(t, filepath.Join(dir, "workflow.yaml")))
			var b bytes.Buffer
			if err := r.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			b.WriteString("---\n")
			enc := json.NewEncoder(&b)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			if err := enc.Encode(r); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", name+".golden")
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("report differs from %s (run go test -update and review the diff):\n%s", path, got)
			}
		})
	}
}

// TestCheck_ReportsEveryPlantedDefectAtItsLine names each defect the corpus
// plants: its kind, its line, and what the message must say.
func TestCheck_ReportsEveryPlantedDefectAtItsLine(t *testing.T) {
	tests := []struct {
		dir, file string
		kind      check.Kind
		sev       check.Severity
		line      int
		msg       string
	}{
		{"score_gap", "", check.KindUncovered, check.SeverityError, 11, "REVIEWING: trigger reviewed with result.score == 7 matches no rule"},
		{"string_set", "", check.KindUncovered, check.SeverityError, 13, `result.approval == "other"`},
		{"input_range", "", check.KindUncovered, check.SeverityError, 12, "input.amount == 50"},
		{"defaults_in", "", check.KindUncovered, check.SeverityError, 12, `result.flagged == true and result.tier == "other"`},
		{"attempts", "", check.KindUncovered, check.SeverityWarning, 13, `outcome error with attempt == 3 and error.kind == "error"`},
		{"heartbeat", "", check.KindUncovered, check.SeverityWarning, 8, "WORKING: outcome timeout matches no rule"},
		{"trap", "", check.KindTrap, check.SeverityError, 11, "state DRAFTING is a trap"},
		{"trap", "", check.KindTrap, check.SeverityError, 12, "state EDITING is a trap"},
		{"hang_wait", "", check.KindHang, check.SeverityWarning, 8, "state ASKING runs agent asker with no timeout and no heartbeat"},
		{"hang_wait", "", check.KindHang, check.SeverityWarning, 9, "wait state APPROVAL has no timeout"},
		{"unreached_outcome", "", check.KindUncovered, check.SeverityError, 5, "WAITING: signal cancel matches no rule"},
		{"unreached_outcome", "", check.KindUnreachedOutcome, check.SeverityWarning, 7, "terminal state ARCHIVED is never reached"},
		{"foreach", "", check.KindUncovered, check.SeverityWarning, 10, "CHECKING: outcome partial matches no rule"},
		{"foreach", "", check.KindUncovered, check.SeverityWarning, 20, `CHECKING: outcome error with error.kind == "invalid_items" matches no rule`},
		{"parallel", "", check.KindUncovered, check.SeverityWarning, 13, "SEARCHING: outcome conflict matches no rule"},
		{"parallel", "", check.KindUncovered, check.SeverityError, 24, "PAYING: trigger paid with result.ok == false matches no rule"},
		{"nested", "", check.KindUncovered, check.SeverityError, 6, "KYC: child outcome REFUSED matches no rule"},
		{"nested", "kyc.yaml", check.KindUncovered, check.SeverityError, 11, "IDENTITY: trigger checked with result.score == 0.5 matches no rule"},
	}
	for _, tt := range tests {
		t.Run(tt.dir+"/"+tt.msg, func(t *testing.T) {
			r := check.Check(load(t, filepath.Join("testdata", "corpus", tt.dir, "workflow.yaml")))
			file := tt.file
			if file == "" {
				file = "workflow.yaml"
			}
			for _, f := range r.All() {
				if f.Kind == tt.kind && f.Line == tt.line && filepath.Base(f.File) == file && strings.Contains(f.Message, tt.msg) {
					if f.Severity != tt.sev {
						t.Errorf("severity: got %s, want %s", f.Severity, tt.sev)
					}
					if f.Kind == check.KindUncovered && f.Witness == nil {
						t.Errorf("no witness")
					}
					return
				}
			}
			t.Errorf("no %s finding at %s:%d saying %q; got:\n%s", tt.kind, file, tt.line, tt.msg, findings(r))
		})
	}
}

func findings(r *check.Report) string {
	var b strings.Builder
	for _, f := range r.All() {
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}

func TestCheck_TotalWorkflowHasNoFinding(t *testing.T) {
	r := check.Check(load(t, "testdata/corpus/clean_total/workflow.yaml"))
	if len(r.All()) != 0 || r.Errors() != 0 {
		t.Fatalf("got findings:\n%s", findings(r))
	}
	for _, so := range r.Produces {
		for _, o := range so.Outcomes {
			if o.Coverage != check.Covered {
				t.Errorf("%s %s: got %s, want covered", so.State, o.Trigger, o.Coverage)
			}
		}
	}
}

func TestCheck_OpaqueConditionIsUndecidedNotAFinding(t *testing.T) {
	r := check.Check(load(t, "testdata/corpus/undecided/workflow.yaml"))
	if r.Errors() != 0 {
		t.Fatalf("got findings:\n%s", findings(r))
	}
	if got := r.Produces[0].Outcomes[0]; got.Trigger != "sorted" || got.Coverage != check.Undecided {
		t.Fatalf("got %+v, want sorted undecided", got)
	}
}

// workflows returns w and every child it runs, by name.
func workflows(w *rules.Workflow, out map[string]*rules.Workflow) map[string]*rules.Workflow {
	out[w.Name] = w
	for _, s := range w.States {
		if s.Child != nil && s.Child.Target != nil && out[s.Child.Target.Name] == nil {
			workflows(s.Child.Target, out)
		}
	}
	return out
}

// confirm evaluates a witness with the workflow's own Match: it must match
// no rule, and no condition may fail at run time.
func confirm(t testing.TB, w *rules.Workflow, f check.Finding) {
	t.Helper()
	wit := f.Witness
	if wit == nil {
		t.Fatalf("%s: no witness", f)
	}
	env := &rules.Env{Result: wit.Result, Input: wit.Input, Context: wit.Context,
		Error: rules.ErrorInfo{Message: wit.Error.Message, Retryable: wit.Error.Retryable, Kind: wit.Error.Kind},
		State: f.State, Agent: w.Owner(f.State), Trigger: wit.Trigger, Step: wit.Step, Visits: wit.Visits, Attempt: wit.Attempt}
	m, err := w.Match(f.State, env.Agent, wit.Trigger, env)
	var nm *rules.NoMatchError
	if !errors.As(err, &nm) {
		t.Fatalf("%s: the witness matches rule %v (err %v)", f, m.Rule, err)
	}
	for _, e := range nm.Tried {
		if e.Err != nil {
			t.Fatalf("%s: condition of %s fails on the witness: %v", f, e.Rule.ID, e.Err)
		}
	}
}

// TestCheck_EveryWitnessIsReal re-evaluates every witness the corpus and
// the examples produce, outside the package.
func TestCheck_EveryWitnessIsReal(t *testing.T) {
	paths, _ := filepath.Glob("../examples/*/workflow*.yaml")
	for _, dir := range corpus(t) {
		paths = append(paths, filepath.Join(dir, "workflow.yaml"))
	}
	n := 0
	for _, p := range paths {
		w := load(t, p)
		ws := workflows(w, map[string]*rules.Workflow{})
		for _, f := range check.Check(w).All() {
			if f.Kind == check.KindUncovered {
				confirm(t, ws[f.Workflow], f)
				n++
			}
		}
	}
	if n < 10 {
		t.Fatalf("confirmed %d witnesses, want the corpus's at least", n)
	}
}

func produces(r *check.Report) map[string]string {
	out := map[string]string{}
	for _, so := range r.Produces {
		var ts []string
		for _, o := range so.Outcomes {
			ts = append(ts, o.Trigger)
		}
		out[so.State] = strings.Join(ts, " ")
	}
	return out
}

// TestCheck_OutcomesOfEachKindOfState lists what each kind of state can
// produce: an agent state's triggers, error, timeout with a timeout or a
// heartbeat, rejected only when a hand-off enters it (not after a wait); a
// wait's signals and its timeout; foreach, parallel and child outcomes.
func TestCheck_OutcomesOfEachKindOfState(t *testing.T) {
	src := `
workflow: kinds
initial: A
agents:
  a: {}
  b: {}
  c: {}
  d: {}
states:
  A: {agent: a}
  B: {agent: b, heartbeat: 10s}
  W: {wait: {signals: [go, stop]}, timeout: 1h}
  C: {agent: c, timeout: 1m}
  EACH: {foreach: {items: '[1, 2]', agent: d}}
  BOTH: {agents: [c, d], merge: majority}
  DONE: {terminal: true}
rules:
  - {id: a1, from: a, trigger: [next, error], next: B}
  - {id: b1, from: b, trigger: [next, error, timeout, rejected], next: W}
  - {id: w1, from: W, trigger: [go, stop, timeout], next: C}
  - {id: c1, from: c, trigger: [next, error, timeout], next: EACH}
  - {id: e1, from: EACH, trigger: [joined, error], next: BOTH}
  - {id: p1, from: BOTH, trigger: [joined, conflict], next: DONE}
`
	w, err := rules.Parse("kinds.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := produces(check.Check(w))
	want := map[string]string{
		"A":    "next error",
		"B":    "next error timeout rejected",
		"W":    "go stop timeout",
		"C":    "next error timeout",
		"EACH": "joined error",
		"BOTH": "joined conflict",
	}
	for s, o := range want {
		if got[s] != o {
			t.Errorf("%s: got %q, want %q", s, got[s], o)
		}
	}
	nested := produces(check.Check(load(t, "testdata/corpus/nested/workflow.yaml")))
	if got, want := nested["KYC"], "VERIFIED REFUSED error timeout"; got != want {
		t.Errorf("KYC: got %q, want %q", got, want)
	}
}

// TestCheck_ThousandsOfEqualitiesStayBounded: an outcome tried against
// 3,000 conditions is decided within the search's budgets.
func TestCheck_ThousandsOfEqualitiesStayBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("workflow: many\ninitial: A\nagents:\n  a: {result: {n: int}}\nstates:\n  A: {agent: a, timeout: 1m}\n  DONE: {terminal: true}\nrules:\n")
	b.WriteString("  - {id: failed, from: a, trigger: [error, timeout], next: DONE}\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "  - {id: r%d, from: a, trigger: done, condition: result.n == %d, next: DONE}\n", i, i)
	}
	w, err := rules.Parse("many.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	r := check.Check(w)
	fs := r.All()
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "A: trigger done with result.n == -1 matches no rule") {
		t.Fatalf("got:\n%s", findings(r))
	}
	confirm(t, w, fs[0])
}

func TestCheckAndExplore_NilWorkflow(t *testing.T) {
	if r := check.Check(nil); r.Errors() != 0 || len(r.All()) != 0 {
		t.Fatalf("got %+v", r)
	}
	if _, err := check.Explore(context.Background(), nil, check.ExploreOptions{}); !errors.Is(err, check.ErrNoWorkflow) {
		t.Fatalf("got %v, want ErrNoWorkflow", err)
	}
}

// An MCP tool and a model call never refuse a hand-off: a state of theirs
// that a hand-off enters has no rejected outcome to cover, while an agent
// that may refuse (here a Go agent) still has.
func TestCheck_ToolsAndModelsNeverReject(t *testing.T) {
	r := check.Check(load(t, "testdata/kinds/workflow.yaml"))
	var rejected []string
	for _, f := range r.All() {
		if strings.Contains(f.Message, "outcome rejected") {
			rejected = append(rejected, f.Message)
		}
	}
	if len(rejected) != 1 || !strings.HasPrefix(rejected[0], "HELPING:") {
		t.Errorf("got rejected findings %q, want one, for HELPING:\n%s", rejected, findings(r))
	}
}
