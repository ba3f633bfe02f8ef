// Package server is the Baton server: it hosts every workflow file of a
// directory, keeps their instances on NATS JetStream (an embedded server
// with its data under the data directory, or a NATS system it joins),
// gives the work of external agents to the NATS transport and takes their
// reports from it, calls HTTP agents, runs the Go handlers it is given,
// and serves the HTTP API that starts, inspects, signals and cancels
// instances, takes agents' reports and streams the engines' events.
// Without NATS (Config.NATS = NoNATS) it keeps instances in a bbolt file
// and external agents' work on the in-memory bus.
//
// One engine runs each workflow version (a workflow's name and the hash of
// its source). Versions that are no longer in the directory but that the
// store has instances of are rebuilt from the sources the store keeps, so
// that their instances finish on their own rules. A report is routed to the
// engine of its instance's version.
//
// Run serves until its context ends, then stops taking new instances,
// drains (the Go handlers' runs under way, HTTP agents' calls included,
// finish and are committed within the grace period; no new run starts),
// closes the engines and the store: the next Run on the same data
// directory resumes every unfinished instance. New builds the same server
// without listening, for a program that mounts Handler itself (and for
// tests); Drain and Close stop it.
package server
