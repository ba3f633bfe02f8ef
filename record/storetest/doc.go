// Package storetest is the conformance suite every record.Store must pass.
// A store's own tests call [Run] with a function that opens a fresh, empty
// store; the suite then checks the contract the engine relies on:
//
//   - Commit stores a step's snapshot and history entries together; Instance
//     returns the last committed snapshot and History every entry in commit
//     order, each field as it was committed.
//   - Instances lists the last snapshot of every instance, sorted by id.
//   - An id never committed gives an error matching record.ErrUnknownInstance.
//   - Commit keeps each outbox item under its Key, per instance, until a
//     later commit settles that key; sending a key again replaces its item,
//     and settling a key not kept is harmless. Outbox returns the unsettled
//     items sorted by step, then key, and is empty for an instance that has
//     none.
//   - The caller may reuse the Entries, Outbox and Settled slices as soon as
//     Commit returns.
//   - Commits to many instances may run concurrently, and a reader never sees
//     part of a step: neither its entries in part nor its snapshot without
//     its outbox change.
//   - AddDeadLetter numbers dead letters 1, 2, 3... in the order added, also
//     when called concurrently, and DeadLetters returns them in that order.
//   - List (record.Lister) pages through the instances newest first, in the
//     reverse of the order of their first commits, each with its last
//     snapshot: the pages a cursor leads through cover every instance the
//     query selects exactly once, filtered by workflow, status, state and
//     Match; an instance created after a page is on none of the later ones,
//     a pruned one on none, and a cursor the store did not give is
//     record.ErrBadCursor.
//   - SaveWorkflow keeps the first source saved under a hash; Workflow
//     returns a copy of it, or an error matching record.ErrUnknownWorkflow.
//
// Values are compared as JSON data, the form every durable store keeps:
// a store may return any number in a Result, Input, Context, outbox or dead
// letter map as a float64, any nested map as map[string]any and any list as
// []any. Times must keep their instant to the nanosecond, and a UTC time
// comes back in UTC; durations must come back exact.
package storetest
