package agentkind

import (
	"github.com/batonhq/baton/a2aagent"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// buildA2A makes an A2A agent, with the bearer token token_env names.
func buildA2A(_ *rules.Workflow, a *rules.Agent, o *options) (registry.Handler, error) {
	token, err := o.env(a.ID, "token_env", a.A2A.TokenEnv)
	if err != nil {
		return nil, err
	}
	return a2aagent.New(a2aagent.Config{URL: a.A2A.URL, Token: token, Client: o.client, Logger: o.log})
}
