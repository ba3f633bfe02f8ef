// Package natsstore is a record.Store on NATS JetStream, for engines in
// several processes or on several machines that share one NATS server or
// cluster.
//
// # What is kept where
//
// With the default prefix "baton":
//
//   - streams baton_steps_0 ... baton_steps_7 (Config.Shards), subjects
//     baton.step.<shard>.<id>: one message per committed step, holding the
//     instance's snapshot after the step, the history entries the step
//     added and the whole unsettled outbox after it. <id> is the instance
//     id in unpadded URL-safe base64, so that any id is one subject token;
//     an id longer than record.MaxIDLen (a child workflow's instance under
//     a long parent id) is '=' and the base64 of its SHA-256 instead, so
//     that no subject grows past what the NATS protocol carries, and every
//     read checks the whole id its records hold. <shard> is a hash of the
//     id. An instance's last message is its snapshot and outbox; all its
//     messages in order are its history. A message no read can use (not a
//     record, or not of the id of its subject) is left out of Instances,
//     with an error logged, so that it cannot hide the other instances.
//   - stream baton_dead, subject baton.dead: dead letters, numbered by
//     their stream sequence.
//   - key-value bucket baton_workflows: workflow sources, keyed by their
//     hash (base64 as above).
//
// # One write per step, fenced
//
// A step is one message, so it is written whole or not at all. The message
// is published with the expected last sequence of its subject: the
// revision of the instance this store last read (Instance, Instances,
// Outbox, History) or wrote, or "no message yet" for an instance it never
// saw. If another store wrote a step in between, the server refuses the
// write and Commit returns a *ConflictError matching ErrFenced; nothing is
// written. This is the fencing several engines rely on: an engine that lost
// an instance to another can never apply a step to it.
//
// # Durability
//
// The store writes through the server: how often the server flushes to
// disk is the server's setting (the embedded server of package natsserver
// syncs every write by default; a server you run needs sync_interval:
// always). The server syncs each stream on its own, which is why steps are
// spread over shards. Config.Replicas sets how many servers of a cluster
// keep each stream; use 3 on a cluster. docs/operations.md has the figures.
//
// # Reading only
//
// OpenReadOnly opens a prefix's existing streams and bucket as they are,
// for tools such as wfrun inspect: it creates and updates none of them,
// fails with ErrNoStore when they are missing, and the store it returns
// refuses every write with ErrReadOnly.
package natsstore
