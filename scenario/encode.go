package scenario

import (
	"bytes"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/registry"
)

// The YAML form of a scenario, keys in the order a reader expects them.
type (
	fileYAML struct {
		Scenario string                 `yaml:"scenario"`
		Workflow string                 `yaml:"workflow"`
		Input    map[string]any         `yaml:"input,omitempty"`
		Agents   map[string][]replyYAML `yaml:"agents,omitempty"`
		Signals  []signalYAML           `yaml:"signals,omitempty"`
		Expect   expectYAML             `yaml:"expect"`
	}
	replyYAML struct {
		Trigger   *string        `yaml:"trigger,omitempty"` // "" too, for an agent that reported no trigger
		Select    string         `yaml:"select,omitempty"`
		Handoff   *handoffYAML   `yaml:"handoff,omitempty"`
		Reject    string         `yaml:"reject,omitempty"`
		Error     string         `yaml:"error,omitempty"`
		Kind      string         `yaml:"kind,omitempty"`
		Retryable *bool          `yaml:"retryable,omitempty"`
		Result    map[string]any `yaml:"result,omitempty"`
		Delay     string         `yaml:"delay,omitempty"`
		Usage     *usageYAML     `yaml:"usage,omitempty"`
	}
	handoffYAML struct {
		To            string         `yaml:"to"`
		Reason        string         `yaml:"reason,omitempty"`
		Explanation   string         `yaml:"explanation,omitempty"`
		Task          string         `yaml:"task,omitempty"`
		Payload       map[string]any `yaml:"payload,omitempty"`
		ReturnControl bool           `yaml:"return_control,omitempty"`
	}
	usageYAML struct {
		InputTokens  int64   `yaml:"input_tokens,omitempty"`
		OutputTokens int64   `yaml:"output_tokens,omitempty"`
		Cost         float64 `yaml:"cost,omitempty"`
		Model        string  `yaml:"model,omitempty"`
	}
	signalYAML struct {
		Signal string         `yaml:"signal"`
		Data   map[string]any `yaml:"data,omitempty"`
		Delay  string         `yaml:"delay,omitempty"`
	}
	expectYAML struct {
		Status          string           `yaml:"status"`
		Outcome         string           `yaml:"outcome,omitempty"`
		States          *[]string        `yaml:"states,flow,omitempty"` // nil is not checked, empty is
		Handoffs        *[]string        `yaml:"handoffs,flow,omitempty"`
		Error           string           `yaml:"error,omitempty"`
		Context         map[string]any   `yaml:"context,omitempty"`
		Steps           *int             `yaml:"steps,omitempty"`
		ConditionErrors bool             `yaml:"condition_errors,omitempty"`
		Property        string           `yaml:"property,omitempty"`
		Usage           *expectUsageYAML `yaml:"usage,omitempty"`
	}
	expectUsageYAML struct {
		Tokens *int64   `yaml:"tokens,omitempty"`
		Cost   *float64 `yaml:"cost,omitempty"`
	}
)

// Marshal writes s as a scenario file that Parse reads back: its name,
// Workflow as it is (a path relative to the folder the file goes in), its
// input, replies, signals and expectations. Numbers are written as JSON
// has them (a float 1.0 reads back as the integer 1). Map keys are sorted: the same scenario is
// always the same text.
func Marshal(s *Scenario) ([]byte, error) {
	f := fileYAML{Scenario: s.Name, Workflow: s.Workflow, Input: s.Input, Agents: map[string][]replyYAML{}}
	for agent, replies := range s.Agents {
		for _, r := range replies {
			f.Agents[agent] = append(f.Agents[agent], replyOf(r))
		}
	}
	for _, sig := range s.Signals {
		f.Signals = append(f.Signals, signalYAML{Signal: sig.Name, Data: sig.Data, Delay: duration(sig.Delay)})
	}
	e := s.Expect
	f.Expect = expectYAML{
		Status: e.Status, Outcome: e.Outcome, Error: e.Error, Context: e.Context,
		Steps: e.Steps, ConditionErrors: e.ConditionErrors, Property: e.Property,
	}
	if e.States != nil {
		f.Expect.States = &e.States
	}
	if e.Handoffs != nil {
		f.Expect.Handoffs = &e.Handoffs
	}
	if e.Usage != nil {
		f.Expect.Usage = &expectUsageYAML{Tokens: e.Usage.Tokens, Cost: e.Usage.Cost}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("scenario: marshal: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("scenario: marshal: %w", err)
	}
	return buf.Bytes(), nil
}

func replyOf(r Reply) replyYAML {
	y := replyYAML{Select: r.Select, Reject: r.Reject, Error: r.Error, Kind: r.Kind, Result: r.Result, Delay: duration(r.Delay)}
	if r.Trigger != "" || (r.Select == "" && r.Handoff == nil && r.Reject == "" && r.Error == "") {
		y.Trigger = &r.Trigger
	}
	if r.Error != "" && !r.Retryable {
		no := false
		y.Retryable = &no
	}
	if h := r.Handoff; h != nil {
		y.Handoff = &handoffYAML{To: h.To, Reason: h.Reason, Explanation: h.Explanation, Task: h.Task, Payload: h.Payload, ReturnControl: h.ReturnControl}
	}
	if r.Usage != (registry.Usage{}) {
		u := r.Usage
		y.Usage = &usageYAML{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Cost: u.Cost, Model: u.Model}
	}
	return y
}

// duration writes a delay as ParseDuration reads it back, exactly; none
// for zero.
func duration(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return d.String()
}
