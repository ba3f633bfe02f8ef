package check_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

// gaps are the corpus workflows with a planted value gap.
var gaps = []string{"score_gap", "string_set", "input_range", "defaults_in", "nested/kyc.yaml"}

func gapPath(g string) string {
	if strings.HasSuffix(g, ".yaml") {
		return filepath.Join("testdata", "corpus", g)
	}
	return filepath.Join("testdata", "corpus", g, "workflow.yaml")
}

// TestExplore_FindsEveryPlantedGap: for seeds 1 to 20, explore finds each
// planted value gap within 1,000 runs, and its shrunk script has no more
// runs than check's shortest path to the gap plus one.
func TestExplore_FindsEveryPlantedGap(t *testing.T) {
	ctx := context.Background()
	for _, g := range gaps {
		w := load(t, gapPath(g))
		shortest := 0
		for _, f := range check.Check(w).All() {
			if f.Kind == check.KindUncovered && f.Severity == check.SeverityError {
				shortest = len(f.Path)
			}
		}
		if shortest == 0 {
			t.Fatalf("%s: check finds no gap", g)
		}
		for seed := uint64(1); seed <= 20; seed++ {
			rep, err := check.Explore(ctx, w, check.ExploreOptions{Runs: 1000, Seed: seed, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			v := rep.Violation
			if v == nil || v.Property != check.PropNoRuleMatched {
				t.Fatalf("%s seed %d: got %+v after %d runs, want a no rule matched", g, seed, v, rep.Runs)
			}
			if v.Replies > shortest+1 {
				t.Errorf("%s seed %d: shrunk to %d replies, want at most %d", g, seed, v.Replies, shortest+1)
			}
		}
	}
}

// TestExplore_SameSeedSameRuns: the report and the written scenario depend
// on the seed only, not on the number of workers.
func TestExplore_SameSeedSameRuns(t *testing.T) {
	ctx := context.Background()
	w := load(t, "testdata/corpus/nested/workflow.yaml") // a gap, and a child workflow
	var reports []string
	var files [][]byte
	for _, workers := range []int{1, 3} {
		rep, err := check.Explore(ctx, w, check.ExploreOptions{Runs: 300, Seed: 7, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Violation == nil {
			t.Fatalf("no violation in %d runs", rep.Runs)
		}
		reports = append(reports, fmt.Sprintf("%d %+v %s %v", rep.Runs, rep.Coverage, rep.Violation.Message, rep.Violation.States))
		path, err := check.WriteViolation(rep.Violation, check.Check(w), 7, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, data)
	}
	for i := 1; i < len(reports); i++ {
		if reports[i] != reports[0] || !bytes.Equal(files[i], files[0]) {
			t.Fatalf("run %d differs:\n%s\n%s\nvs\n%s\n%s", i, reports[i], files[i], reports[0], files[0])
		}
	}
}

// TestExplore_ShrunkScenarioFailsTheSameWay writes each violation of the
// gaps as a scenario and replays it as wfrun test does: the replay fails on
// the same no rule matched.
func TestExplore_ShrunkScenarioFailsTheSameWay(t *testing.T) {
	ctx := context.Background()
	for _, g := range append(gaps, "trap") {
		w := load(t, gapPath(g))
		rep, err := check.Explore(ctx, w, check.ExploreOptions{Runs: 1000, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Violation == nil {
			t.Fatalf("%s: no violation", g)
		}
		path, err := check.WriteViolation(rep.Violation, check.Check(w), 3, filepath.Join(t.TempDir(), "scenarios"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := scenario.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := scenario.Run(ctx, s, rules.LoadBeside)
		if err != nil {
			t.Fatal(err)
		}
		if got.Passed() || got.Result.Err == nil {
			t.Fatalf("%s: the scenario passes: %v", path, got.Failures)
		}
		want := "no rule matched"
		if rep.Violation.Property == check.PropLimitHit {
			want = "limit"
		}
		if !strings.Contains(got.Result.Err.Error(), want) || strings.Contains(strings.Join(got.Failures, "\n"), "left unconsumed") {
			t.Errorf("%s: got %v, %v; want a failure on %q and every reply consumed", path, got.Result.Err, got.Failures, want)
		}
	}
}

// TestExplore_NoViolationWhereCheckProvesTotal: on workflows check proves
// total (every outcome covered, no finding), explore finds nothing.
func TestExplore_NoViolationWhereCheckProvesTotal(t *testing.T) {
	ctx := context.Background()
	workflows := []*rules.Workflow{load(t, "testdata/corpus/clean_total/workflow.yaml")}
	rng := rand.New(rand.NewPCG(5, 6))
	for len(workflows) < 15 {
		data := make([]byte, 40)
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		w, err := rules.Parse("fuzz.yaml", []byte(fuzzWorkflow(data)))
		if err != nil {
			t.Fatal(err)
		}
		if total(check.Check(w)) {
			workflows = append(workflows, w)
		}
	}
	for i, w := range workflows {
		rep, err := check.Explore(ctx, w, check.ExploreOptions{Runs: 150, Seed: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		if v := rep.Violation; v != nil {
			t.Errorf("workflow %d: check proves it total, explore found %s: %s", i, v.Property, v.Message)
		}
	}
}

func total(r *check.Report) bool {
	if len(r.Findings) > 0 {
		for _, f := range r.Findings {
			if f.Kind != check.KindHang {
				return false
			}
		}
	}
	for _, so := range r.Produces {
		for _, o := range so.Outcomes {
			if o.Coverage != check.Covered {
				return false
			}
		}
	}
	return true
}

func TestExplore_PropertyViolation(t *testing.T) {
	w := load(t, "testdata/corpus/clean_total/workflow.yaml")
	rep, err := check.Explore(context.Background(), w, check.ExploreOptions{Runs: 200, Seed: 1, Properties: []string{`outcome != "BAD" || steps >= 1`, `outcome == "GOOD"`}})
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Violation
	if v == nil || v.Property != `outcome == "GOOD"` {
		t.Fatalf("got %+v, want the second property broken", v)
	}
	if v.Replies != 1 {
		t.Errorf("shrunk to %d replies, want 1", v.Replies)
	}
}

func TestExplore_PropertyThatDoesNotCompile(t *testing.T) {
	w := load(t, "testdata/corpus/clean_total/workflow.yaml")
	_, err := check.Explore(context.Background(), w, check.ExploreOptions{Runs: 1, Properties: []string{"outcome +"}})
	if !errors.Is(err, check.ErrProperty) {
		t.Fatalf("got %v, want ErrProperty", err)
	}
	_, err = check.Explore(context.Background(), w, check.ExploreOptions{Runs: 1, Properties: []string{"steps"}})
	if !errors.Is(err, check.ErrProperty) {
		t.Fatalf("a property that is not bool: got %v, want ErrProperty", err)
	}
}

// TestExplore_NoRuleMatchedOnlyWhereCheckDoesNotProveCoverage: every
// outcome explore finds without a rule is one check did not prove covered.
func TestExplore_NoRuleMatchedOnlyWhereCheckDoesNotProveCoverage(t *testing.T) {
	paths, _ := filepath.Glob("testdata/corpus/*/workflow.yaml")
	examples, _ := filepath.Glob("../examples/*/workflow*.yaml")
	var ws []*rules.Workflow
	for _, p := range append(paths, examples...) {
		ws = append(ws, load(t, p))
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for range 40 {
		data := make([]byte, 40)
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		w, err := rules.Parse("fuzz.yaml", []byte(fuzzWorkflow(data)))
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	found := 0
	for i, w := range ws {
		rep, err := check.Explore(context.Background(), w, check.ExploreOptions{Runs: 100, Seed: uint64(i), AllowLimits: true})
		if err != nil {
			t.Fatal(err)
		}
		v := rep.Violation
		if v == nil || v.Property != check.PropNoRuleMatched || v.State == "" {
			continue
		}
		found++
		for _, r := range []*check.Report{check.Check(w)} {
			for _, c := range append([]*check.Report{r}, r.Children...) {
				for _, so := range c.Produces {
					for _, o := range so.Outcomes {
						if so.State == v.State && o.Trigger == v.Trigger && o.Coverage == check.Covered {
							t.Errorf("%s: check proves %s %s covered, explore found: %s", w.Name, v.State, v.Trigger, v.Message)
						}
					}
				}
			}
		}
	}
	if found < 10 {
		t.Fatalf("explore found %d outcomes without a rule, want the corpus's and the examples'", found)
	}
}
