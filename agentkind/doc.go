// Package agentkind turns the agents a workflow file describes into the
// handlers an engine runs: an HTTP agent (url), an A2A agent (a2a), a tool
// of an MCP server (mcp) and a model call (llm). Each is a
// registry.Handler, and those that hold something open (a stdio MCP
// server, an A2A agent's task subscriptions) are io.Closers too: that is
// all the engine and the server know of them.
//
// Handlers builds the set once per workflow. The environment variables the
// file names (secret_env, token_env, key_env, base_url_env) are read then,
// and a missing one is an error naming it, not a failure at the first run.
// Agents without one of those keys get no handler here: the caller gives
// them a Go handler, or leaves them external (they take their work from
// the transport).
//
// A workflow run from a scenario (wfrun run, wfrun test) needs none of
// this: a scenario scripts every agent by id, whatever its kind, and never
// calls out.
package agentkind
