package agentkind

import (
	"github.com/batonhq/baton/mcpagent"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// buildMCP makes an MCP agent: a server over HTTP, or a stdio server
// started in the workflow file's folder.
func buildMCP(_ *rules.Workflow, a *rules.Agent, o *options) (registry.Handler, error) {
	spec := a.MCP
	token, err := o.env(a.ID, "token_env", spec.TokenEnv)
	if err != nil {
		return nil, err
	}
	cfg := mcpagent.Config{URL: spec.URL, Command: spec.Command, Token: token, Tool: spec.Tool, Client: o.client, Logger: o.log}
	if len(spec.Command) > 0 {
		cfg.Dir = spec.Dir
	}
	if spec.Arguments != nil {
		cfg.Arguments = func(t *registry.Task) (map[string]any, error) { return spec.EvalArguments(rules.TaskEnvOf(t)) }
	}
	return mcpagent.New(cfg)
}
