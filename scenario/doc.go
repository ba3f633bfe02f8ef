// Package scenario loads scenario files (docs/scenario-format.md) and replays them against
// their workflow.
//
// A scenario scripts every agent's replies, consumed in order, one per run of
// that agent, and states what must happen: the status, the outcome, the exact
// path of states and the exact agent-to-agent hand-offs, or a substring of the
// failure. [Run] replays it on a clock.Sim: the engine's work, its timers and
// the agents' reply delays all run in one goroutine on a virtual clock that
// starts at [Epoch], and ids come from a counter, so two replays of the same
// scenario produce byte-identical histories. An agent with no reply left, a
// reply left unconsumed, and every expectation that does not hold are listed
// in [Report.Failures].
//
// The other way round, [FromHistory] turns an instance that ran (its snapshot
// and history, and its children's) into the scenario that replays it, and
// [Marshal] writes a scenario as a file: a live run becomes a test.
package scenario
