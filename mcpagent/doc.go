// Package mcpagent runs an agent by calling one tool of an MCP server: a
// server at a URL (streamable HTTP, with a bearer token when one is
// given) or one the agent starts itself and talks to over stdio.
//
// # The life of a run
//
// The first run opens the session: it connects to the URL, or starts the
// command in its folder, and lists the server's tools to find the tool's
// input schema, which the session keeps. Every run then builds the
// arguments (Config.Arguments, by default the hand-off's environment:
// input, context, previous_result, and item and index for a run over one
// item, each left out when it is nil), checks them against that schema,
// and calls the tool. Arguments the schema refuses never reach the server.
//
// The answer maps to the run's outcome:
//
//   - trigger done, with result the structuredContent when it is an
//     object ({value: ...} when it is another JSON value), else the text
//     content when it parses as a JSON object, else {text: ...} (an
//     answer with no text at all is an empty result);
//   - isError: a failed run of kind tool_error, with the tool's text as
//     its message;
//   - _meta.usage ({input_tokens, output_tokens, cost}), when present, is
//     the run's usage, failed or not.
//
// # Failures
//
// Every failure is a typed error (see errors.go) marked with a kind that
// retry policies and rules read:
//
//   - invalid_arguments: arguments that could not be built or that the
//     input schema refuses (or the server answered invalid params); never
//     retried;
//   - unknown_tool: the server does not list the tool; never retried;
//   - protocol: a refused initialize or tools/list, an input schema that
//     does not compile; never retried;
//   - tool_error: isError, or a JSON-RPC error answering the call;
//   - transport: a server that cannot be reached or started, a connection
//     or process that ended, an answer that is not JSON-RPC, a run whose
//     context ended first;
//   - invalid_result: _meta.usage that is not usage.
//
// Every call is bounded by the run's context (DefaultTimeout when it has
// no deadline).
//
// # Stdio servers
//
// The command starts once per Agent, on its first run. When it exits, or
// writes something that is not JSON-RPC on its stdout, the runs under way
// fail with kind transport and the next run starts it again. Close closes
// its input and waits for it to exit (SIGTERM, then SIGKILL, after
// StopTimeout each). Its stderr goes to the logger, a line at a time.
package mcpagent
