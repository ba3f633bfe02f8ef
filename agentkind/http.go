package agentkind

import (
	"github.com/batonhq/baton/httpagent"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// buildHTTP makes an HTTP agent: the engine POSTs the work to its url,
// signed with the secret secret_env names.
func buildHTTP(_ *rules.Workflow, a *rules.Agent, o *options) (registry.Handler, error) {
	opts := []httpagent.Option{httpagent.WithLogger(o.log)}
	if a.SecretEnv != "" {
		secret, err := o.env(a.ID, "secret_env", a.SecretEnv)
		if err != nil {
			return nil, err
		}
		opts = append(opts, httpagent.WithSecret([]byte(secret)))
	}
	if o.client != nil {
		opts = append(opts, httpagent.WithClient(o.client))
	}
	return httpagent.New(a.URL, opts...)
}
