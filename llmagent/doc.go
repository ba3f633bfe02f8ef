// Package llmagent runs an agent as one call of an OpenAI-compatible chat
// model: the model's answer is the run's outcome.
//
// # The life of a run
//
// Handle builds two messages: the configured system message, and a user
// message that is the agent's prompt (by default the task description, a
// blank line, then "Context:" and the hand-off's context as JSON). It
// POSTs them to {base}/chat/completions with a strict JSON Schema as the
// response format: an object with `trigger`, one of the triggers the rules
// leaving the agent's states name, and `result`, the agent's result
// declaration. The answer's trigger and result are the outcome; the
// response's token counts, the model that answered and the cost worked out
// from the configured price are the run's usage, whether the run succeeds
// or not.
//
// # Failures and their kinds
//
// An answer that is not that JSON fails the run with kind invalid_result
// (retried: a model may answer better next time); 429 is rate_limited; a
// 5xx, 408, a refused connection or no answer before the run's deadline is
// transport; any other 4xx is llm_error and is not retried. The API key is
// sent in the Authorization header and nowhere else: it never appears in a
// log line or an error, and text from the server is cleaned of it before
// it is quoted.
package llmagent
