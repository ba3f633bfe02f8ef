package check_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

// TestWriteScenarios_EveryScenarioReproducesItsFinding writes the
// scenarios of the whole corpus, then replays each one as `wfrun test`
// would: every one must pass, that is, fail with no rule matched.
func TestWriteScenarios_EveryScenarioReproducesItsFinding(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	var written []string
	skipped := map[string]string{}
	for _, d := range corpus(t) {
		r := check.Check(load(t, filepath.Join(d, "workflow.yaml")))
		ws, err := check.WriteScenarios(ctx, r, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			if w.Path != "" {
				written = append(written, filepath.Base(w.Path))
			} else {
				skipped[w.Finding.String()] = w.Skipped
			}
		}
	}
	want := []string{
		"attempts-calling-error.yaml",
		"defaults-in-classifying-classified.yaml",
		"foreach-checking-error.yaml",
		"foreach-checking-partial.yaml",
		"heartbeat-working-timeout.yaml",
		"input-range-routing-routed.yaml",
		"kyc-identity-checked.yaml",
		"onboarding-kyc-refused.yaml",
		"parallel-paying-paid.yaml",
		"parallel-searching-conflict.yaml",
		"score-gap-reviewing-reviewed.yaml",
		"string-set-reviewing-reviewed.yaml",
		"unreached-outcome-waiting-cancel.yaml",
	}
	slices.Sort(written)
	if !slices.Equal(written, want) {
		t.Errorf("written: got %v, want %v (skipped: %v)", written, want, skipped)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) != len(want) {
		t.Fatalf("got %d files in %s, want %d", len(files), dir, len(want))
	}
	for _, f := range files {
		s, err := scenario.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if s.Expect.Status != "failed" || s.Expect.Error != "no rule matched" {
			t.Errorf("%s: expects %q %q, want failed with no rule matched", f, s.Expect.Status, s.Expect.Error)
		}
		rep, err := scenario.Run(ctx, s, rules.LoadBeside)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Passed() {
			t.Errorf("%s does not reproduce its finding: %v", f, rep.Failures)
		}
	}
}

// TestWriteScenarios_PathWithConditions drives an instance through a
// conditional rule and a context merge before the witness.
func TestWriteScenarios_PathWithConditions(t *testing.T) {
	src := `
workflow: chain
initial: A
input: {limit: int}
agents:
  a: {result: {n: int}}
  b: {result: {ok: bool, level: int}}
states:
  A: {agent: a, timeout: 1m}
  B: {agent: b, timeout: 1m}
  DONE: {terminal: true}
  LOW: {terminal: true}
rules:
  - {id: go, from: a, trigger: counted, condition: result.n > input.limit || result.n >= 10, next: B, context: {n: result.n}}
  - {id: stop, from: a, trigger: [counted, error, timeout], next: LOW}
  - {id: ok, from: b, trigger: checked, condition: result.ok && context.n >= 10, next: DONE}
  - {id: low, from: b, trigger: checked, condition: result.level < 3, next: LOW}
  - {id: b_failed, from: b, trigger: [error, timeout, rejected], next: LOW}
`
	dir := t.TempDir()
	path := filepath.Join(dir, "chain.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	w := load(t, path)
	r := check.Check(w)
	var f *check.Finding
	for _, x := range r.All() {
		if x.State == "B" && x.Trigger == "checked" {
			f = &x
		}
	}
	if f == nil {
		t.Fatalf("no finding for B checked:\n%s", findings(r))
	}
	confirm(t, w, *f)
	if got := f.Path; !slices.Equal(got, []string{"A", "B"}) {
		t.Fatalf("path: got %v", got)
	}
	ws, err := check.WriteScenarios(context.Background(), r, filepath.Join(dir, "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	replayed := 0
	for _, wr := range ws {
		if wr.Path == "" {
			t.Errorf("no scenario for %s: %s", wr.Finding, wr.Skipped)
			continue
		}
		s, err := scenario.Load(wr.Path)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := scenario.Run(context.Background(), s, rules.LoadBeside)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Passed() {
			t.Errorf("%s: %v", wr.Path, rep.Failures)
		}
		if wr.Finding.State == "B" && !slices.Equal(rep.States, []string{"A", "B"}) {
			t.Errorf("%s: states %v, want [A B]", wr.Path, rep.States)
		}
		replayed++
	}
	if replayed == 0 {
		t.Fatal("no scenario replayed")
	}
}
