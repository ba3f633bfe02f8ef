package rules_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// FuzzLoad feeds arbitrary bytes to the loader: it must never panic or
// hang, every error must be a *LoadError whose diagnostics are positioned,
// and a workflow that loads must survive matching every outcome it names.
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"testdata/valid/*.yaml", "testdata/invalid/*.yaml", "../examples/*/workflow*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if src, err := os.ReadFile(file); err == nil {
				f.Add(src)
			}
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		w, err := rules.Parse("fuzz.yaml", src)
		if err != nil {
			var le *rules.LoadError
			if !errors.As(err, &le) || len(le.Diagnostics) == 0 {
				t.Fatalf("got %T %v, want a *LoadError with diagnostics", err, err)
			}
			if w != nil {
				t.Fatal("got a workflow along with errors")
			}
			checkPositions(t, le.Diagnostics)
			return
		}
		checkPositions(t, w.Warnings)
		taskEnv := rules.TaskEnvOf(&registry.Task{})
		for _, a := range w.Agents {
			if a.MCP != nil && a.MCP.Arguments != nil {
				_, _ = a.MCP.EvalArguments(taskEnv)
			}
			if a.LLM != nil && a.LLM.Prompt != nil {
				_, _ = a.LLM.EvalPrompt(taskEnv)
			}
		}
		env := &rules.Env{}
		for _, s := range w.States {
			if s.Iterates() {
				if _, err := w.Items(s, env); err != nil {
					var ie *rules.ItemsError
					if !errors.As(err, &ie) {
						t.Fatalf("items of %s: got %T %v, want an *ItemsError", s.Name, err, err)
					}
				}
			}
			owner := w.Owner(s.Name)
			for _, r := range w.Rules {
				for _, tr := range r.Triggers {
					m, err := w.Match(s.Name, owner, tr, env)
					if err == nil {
						_, _ = m.Rule.TaskDescription(env)
						_, _ = m.Rule.EvalContext(env)
					} else if !errors.Is(err, rules.ErrNoRuleMatched) {
						t.Fatalf("match %s/%s/%s: got %v, want a rule or no match", s.Name, owner, tr, err)
					}
				}
			}
		}
	})
}

func checkPositions(t *testing.T, ds []rules.Diagnostic) {
	t.Helper()
	for _, d := range ds {
		if d.Line < 1 || d.Col < 1 || d.Message == "" || d.File != "fuzz.yaml" {
			t.Fatalf("got unpositioned or empty diagnostic %+v", d)
		}
	}
}
