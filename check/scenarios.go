package check

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

// Written is what WriteScenarios did for one uncovered outcome: the
// scenario file it wrote, or why it wrote none.
type Written struct {
	Finding Finding
	// Path is the scenario file; empty when none was written.
	Path string
	// Skipped says why no scenario was written: the path runs a state a
	// script cannot drive here, no values drive the path, or the replay did
	// not reproduce the finding.
	Skipped string
}

// WriteScenarios writes into dir, for each uncovered outcome of r and of
// its children, a scenario that drives an instance along the shortest path
// to it (replies whose triggers and values make the path's rules fire, the
// witness last) and expects the instance to fail with no rule matched. Each
// scenario is replayed before it is kept: a file is written only when the
// replay passes, that is, when it reproduces the finding.
func WriteScenarios(ctx context.Context, r *Report, dir string) ([]Written, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("check: scenarios: %w", err)
	}
	var out []Written
	for _, rep := range r.reports() {
		for _, f := range rep.Findings {
			if f.Kind != KindUncovered {
				continue
			}
			wr, err := rep.writeScenario(ctx, f, dir)
			if err != nil {
				return out, err
			}
			out = append(out, wr)
		}
	}
	return out, nil
}

// reports lists r and its children, depth first.
func (r *Report) reports() []*Report {
	out := []*Report{r}
	for _, c := range r.Children {
		out = append(out, c.reports()...)
	}
	return out
}

// scenarioFile is the YAML form of a written scenario, keys in the order a
// reader expects them.
type scenarioFile struct {
	Scenario string             `yaml:"scenario"`
	Workflow string             `yaml:"workflow"`
	Input    map[string]any     `yaml:"input,omitempty"`
	Agents   map[string][]reply `yaml:"agents,omitempty"`
	Signals  []signal           `yaml:"signals,omitempty"`
	Expect   expectation        `yaml:"expect"`
}

type reply struct {
	Trigger   string         `yaml:"trigger,omitempty"`
	Result    map[string]any `yaml:"result,omitempty"`
	Error     string         `yaml:"error,omitempty"`
	Retryable *bool          `yaml:"retryable,omitempty"`
	Kind      string         `yaml:"kind,omitempty"`
	Reject    string         `yaml:"reject,omitempty"`
	Delay     string         `yaml:"delay,omitempty"`
}

type signal struct {
	Signal string         `yaml:"signal"`
	Data   map[string]any `yaml:"data,omitempty"`
}

type expectation struct {
	Status string   `yaml:"status"`
	Error  string   `yaml:"error"`
	States []string `yaml:"states"`
}

func (r *Report) writeScenario(ctx context.Context, f Finding, dir string) (Written, error) {
	wr := Written{Finding: f}
	c := r.c
	if c == nil {
		wr.Skipped = "the report was not made by Check"
		return wr, nil
	}
	sc, why := c.script(f)
	if why != "" {
		wr.Skipped = why
		return wr, nil
	}
	name := fmt.Sprintf("%s-%s-%s.yaml", c.w.Name, f.State, f.Trigger)
	name = unsafeName.ReplaceAllString(strings.ToLower(name), "_")
	path := filepath.Join(dir, name)
	wfPath, err := relativePath(dir, c.w.File)
	if err != nil {
		return wr, err
	}
	sc.file.Workflow = wfPath
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Written by wfrun check: reproduces %s:%d:%d\n", f.File, f.Line, f.Col)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(sc.file); err != nil {
		return wr, fmt.Errorf("check: scenario %s: %w", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return wr, fmt.Errorf("check: scenario: %w", err)
	}
	if why := replays(ctx, path); why != "" {
		_ = os.Remove(path)
		wr.Skipped = "the replay did not reproduce it: " + why
		return wr, nil
	}
	wr.Path = path
	return wr, nil
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_.-]+`)

func relativePath(dir, file string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("check: scenarios: %w", err)
	}
	f, err := filepath.Abs(file)
	if err != nil {
		return "", fmt.Errorf("check: scenarios: %w", err)
	}
	rel, err := filepath.Rel(d, f)
	if err != nil {
		return "", fmt.Errorf("check: scenarios: %w", err)
	}
	return filepath.ToSlash(rel), nil
}

// replays runs the scenario at path and returns why it failed, or "".
func replays(ctx context.Context, path string) string {
	s, err := scenario.Load(path)
	if err != nil {
		return err.Error()
	}
	rep, err := scenario.Run(ctx, s, rules.LoadBeside)
	if err != nil {
		return err.Error()
	}
	if !rep.Passed() {
		return strings.Join(rep.Failures, "; ")
	}
	return ""
}

func nonEmpty(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}
