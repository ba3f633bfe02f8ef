// Package check proves properties of a workflow before it runs, from its
// rules alone (docs/checking.md).
//
// Check walks every path the rules allow from the initial state. For each
// reachable state it lists the outcomes the state can produce: an agent
// state's triggers (those its rules name), error, timeout (with a timeout or
// heartbeat) and rejected (when a hand-off enters it); a wait's signals and
// its timeout; a foreach or parallel state's joined, partial, conflict or
// error; a workflow state's child terminal states, error and timeout. For
// each outcome it asks whether some rule fires whatever the values: the
// conditions are read as boolean combinations of comparisons of one field
// with literals (numbers as intervals, strings and bools as sets, typed by
// the workflow's input and result declarations; &&, ||, !, in, ?? defaults
// and the comparison operators), and a search over one value per region the
// literals cut each field into looks for values no condition accepts. What
// the reading cannot follow (a function call, arithmetic) may be true or
// false: such an outcome is undecided unless a witness turns up. Every
// witness is confirmed by giving its environment to the workflow's own
// rules.Workflow.Match before it is reported, so a reported witness is
// never a guess.
//
// Check also reports traps (states from which no terminal state can be
// reached), states that can wait for ever, terminal states no path
// reaches, and a bound on the agent runs of one instance. WriteScenarios
// turns each uncovered outcome into a scenario file that reproduces it, and
// replays it before keeping it.
//
// Explore runs the workflow instead: random instances on the scenario clock
// (package scenario), whose replies are drawn from the triggers the rules
// name, the result declarations and the literals the conditions compare
// with, with failures, timeouts, rejections, signals and foreach lists. A
// run that breaks a property (a condition error, no rule matched, an
// invalid result, a limit hit, more runs than Check's worst case, or an
// expression of the caller's) is shrunk to a minimal script, which
// WriteViolation writes as a scenario that fails the same way. The same
// seed makes the same runs whatever the number of workers.
package check
