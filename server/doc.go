// Package server is the Baton server: it hosts every workflow file of a
// directory, keeps their instances in a bbolt store under the data
// directory, calls HTTP agents, and serves the HTTP API that starts,
// inspects, signals and cancels instances, takes agents' reports and
// streams the engines' events.
//
// One engine runs each workflow version (a workflow's name and the hash of
// its source). Versions that are no longer in the directory but that the
// store has instances of are rebuilt from the sources the store keeps, so
// that their instances finish on their own rules. A report is routed to the
// engine of its instance's version.
//
// Run serves until its context ends, then stops taking requests, closes the
// engines (the runs under way are left as the store has them) and closes
// the store: the next Run on the same data directory resumes every
// unfinished instance. New builds the same server without listening, for a
// program that mounts Handler itself (and for tests).
package server
