// Package replay checks a recorded instance history against a workflow,
// typically an edited version of the one that produced it: does the new
// workflow make the same decisions?
//
// Check walks the history's outcomes in order. For each one it rebuilds the
// condition environment the rules saw (the recorded result, error, step and
// attempt; the input; the context and visits as the new workflow's rules
// would have made them along the same path), lets the new workflow choose,
// and compares that choice with the recorded one: the rule that fired, the
// state entered, the agent handed off to, and whether a limit refused the
// transition. The first difference is the divergence. Up to it the paths
// are identical, so every recorded outcome stays valid; after it they are
// not, and Check stops.
//
// Agents are not run again: a replay tests the rules, not the agents.
package replay
