// Package fsm turns a compiled workflow into the state machine that guards
// every transition of a workflow instance.
//
// A [Definition] is compiled once per workflow: each rule becomes one event
// (named after the rule id) whose sources are the rule's source states and
// whose destination is its next state, and the workflow's on_limit state adds
// the implicit event [LimitEvent] from every other state. The definition is
// immutable and shared by every instance. Its size is linear in the
// workflow: rules from the same agent share one set of source states, so a
// chain of n states owned by one agent costs n entries, not n².
//
// A [Machine] is one instance's view of the definition: it holds nothing but
// the current state's name, so an idle instance costs a few dozen bytes. To
// fire an event, the machine checks it against the definition's table (an
// unknown event or one not declared from the current state is refused) and
// takes it; a transition into the current state is a success. Firing
// allocates nothing and takes no lock but the machine's own. The package's
// tests check the table against looplab/fsm built over every edge of the
// example workflows: both accept and refuse the same (state, event) pairs
// and reach the same states. Machines are safe for concurrent use.
//
// [Mermaid] and [DOT] draw a workflow's state diagram.
package fsm
