package scenario

import "github.com/batonhq/baton/registry"

// priced is a reply's usage with, for an LLM agent with a price and a
// reply that gives tokens but no cost, the cost the agent would have
// reported: a scripted model step costs what the real one would.
func (s *script) priced(agent string, u registry.Usage) registry.Usage {
	if u.Cost != 0 || (u.InputTokens == 0 && u.OutputTokens == 0) {
		return u
	}
	for _, w := range workflows(s.wf) {
		if a, ok := w.Agent(agent); ok {
			if a.LLM != nil && a.LLM.Price != nil {
				u.Cost = a.LLM.Price.Cost(u.InputTokens, u.OutputTokens)
			}
			return u
		}
	}
	return u
}
