package rules_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/batonhq/baton/rules"
)

func TestLoadSet_LinksChildren(t *testing.T) {
	for _, paths := range [][]string{
		{"testdata/set/ok"},
		{"testdata/set/ok/onboarding.yaml", "testdata/set/ok/kyc.yaml"},
	} {
		set, err := rules.LoadSet(paths...)
		if err != nil {
			t.Fatalf("LoadSet(%v): %v", paths, err)
		}
		parent, ok := set.Workflow("onboarding")
		if !ok {
			t.Fatalf("LoadSet(%v): no onboarding workflow", paths)
		}
		st, _ := parent.State("KYC")
		if !st.Calls() || st.Child.Target == nil || st.Child.Target.Name != "kyc" {
			t.Fatalf("got child %+v, want workflow kyc linked", st.Child)
		}
		if parent.Owner("KYC") != "KYC" || st.Timeout == 0 {
			t.Errorf("got owner %q, timeout %s; want the state itself and 1h", parent.Owner("KYC"), st.Timeout)
		}
		if len(parent.Warnings) != 0 {
			t.Errorf("got warnings %v, want none", parent.Warnings)
		}
		in, err := st.Child.EvalInput("KYC", &rules.Env{Input: map[string]any{"customer": "c-1"}, Context: map[string]any{"x": 1}})
		if err != nil || len(in) != 1 || in["customer_id"] != "c-1" {
			t.Errorf("got input %v, %v; want {customer_id: c-1}", in, err)
		}
	}
}

func TestLoadSet_CrossChecks(t *testing.T) {
	_, err := rules.LoadSet("testdata/set/bad")
	var le *rules.LoadError
	if !errors.As(err, &le) {
		t.Fatalf("got %v, want a *LoadError", err)
	}
	got := err.Error()
	for _, want := range []string{
		`testdata/set/bad/a.yaml:5:22: state "CALL_X" calls unknown workflow "kcy" (did you mean "kyc"?)`,
		`testdata/set/bad/a.yaml:8:5: rule "b_done": workflow "beta" never ends in "FINISHED": state "CALL_B" reports DONE, OTHER, error, timeout`,
		`testdata/set/bad/b.yaml:4:22: state "CALL_A" makes workflow "alpha" reach itself through its children: alpha -> beta -> alpha`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("got\n%s\nwant a line %q", got, want)
		}
	}
}

func TestLoadSet_WarnsAboutUncoveredTerminals(t *testing.T) {
	set, err := rules.LoadSet("testdata/set/warn")
	if err != nil {
		t.Fatal(err)
	}
	w, _ := set.Workflow("onboarding")
	want := `testdata/set/warn/onboarding.yaml:5:3: warning: no rule from workflow state "KYC" covers its child's terminal state "REJECTED": a child that ends there fails the instance`
	if len(w.Warnings) != 1 || w.Warnings[0].String() != want {
		t.Errorf("got warnings %v, want %s", w.Warnings, want)
	}
}

func TestLoadSet_Refuses(t *testing.T) {
	tests := []struct{ name, path, want string }{
		{"a missing path", "testdata/set/none", "no such file"},
		{"a child state in a single file keeps other kinds' outcomes out", "testdata/invalid/child_errors.yaml", `not "joined"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := rules.LoadSet(tt.path); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
