package agentkind

import (
	"github.com/batonhq/baton/llmagent"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// buildLLM makes an LLM agent: its answers choose among the triggers of
// the rules leaving its states, and carry its result declaration.
func buildLLM(w *rules.Workflow, a *rules.Agent, o *options) (registry.Handler, error) {
	spec := a.LLM
	key, err := o.env(a.ID, "key_env", spec.KeyEnv)
	if err != nil {
		return nil, err
	}
	base, err := o.env(a.ID, "base_url_env", spec.BaseURLEnv)
	if err != nil {
		return nil, err
	}
	cfg := llmagent.Config{
		Model: spec.Model, BaseURL: base, Key: key, System: spec.System, Temperature: spec.Temperature,
		Triggers: w.Triggers(a.ID), Result: a.Result.JSONSchema(), Client: o.client, Logger: o.log,
	}
	if spec.Price != nil {
		cfg.Price = spec.Price
	}
	if spec.Prompt != nil {
		cfg.Prompt = func(t *registry.Task) (string, error) { return spec.EvalPrompt(rules.TaskEnvOf(t)) }
	}
	return llmagent.New(cfg)
}
