// Package httpagent calls an agent over HTTP: the agent behind a workflow's
// `url`. Each run POSTs the work, the same JSON an agent on a transport
// receives, and reads the answer:
//
//   - 200 with a report in its body ends the run with that report (a 200
//     whose body is not a report of this run is a failed run naming why);
//   - 202 means the agent will POST its report to the server later
//     (POST /v1/reports), before the run's deadline;
//   - any other 4xx but 408 and 429 is a failed run that is not retried;
//   - 5xx, 408, 429, a refused connection or no answer before the deadline
//     is a failed run of kind "transport" that the state's retry policy may
//     retry.
//
// When the agent has a secret the request carries Baton-Signature:
// sha256=<hex HMAC-SHA256 of the body>; Verify checks it on the agent's side.
// Bodies over 1 MiB are refused both ways.
package httpagent
