// Package storetest is the conformance suite every engine.Store must pass.
// A store's own tests call [Run] with a function that opens a fresh, empty
// store; the suite then checks the contract the engine relies on:
//
//   - Commit stores a step's snapshot and history entries together; Instance
//     returns the last committed snapshot and History every entry in commit
//     order, each field as it was committed.
//   - Instances lists the last snapshot of every instance, sorted by id.
//   - An id never committed gives an error matching engine.ErrUnknownInstance.
//   - The caller may reuse the Entries slice as soon as Commit returns.
//   - Commits to many instances may run concurrently, and a reader never sees
//     part of a step.
//
// Values are compared as JSON data, the form every durable store keeps:
// a store may return any number in a Result, Input or Context map as a
// float64, any nested map as map[string]any and any list as []any. Times
// must keep their instant to the nanosecond, and a UTC time comes back in
// UTC; durations must come back exact.
package storetest
