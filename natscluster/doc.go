// Package natscluster shares the instances of one NATS JetStream store
// between several engines: a cluster of Baton servers, or Go programs
// embedding the engine, connected to the same NATS system.
//
// The instances are split into partitions by a hash of their id
// (natsstore.Config.Partitions, 64 by default here). Each partition is
// leased to one engine at a time in a NATS key-value bucket, and each
// engine heartbeats a member record there. A Node:
//
//   - claims its fair share of the partitions (the partitions divided by
//     the engines alive, the first engines by name taking one more), and
//     gives up the partitions beyond it, so that a new engine gets work and
//     a stopped one hands its work over at once;
//   - takes over the partitions of an engine whose heartbeat has not been
//     seen for Config.LeaseTTL (it crashed, or is cut off);
//   - on each partition it takes, fences the store (natsstore.Store.Fence)
//     with the lease's revision, so that the server refuses every later
//     commit of the engine that had it, and then calls Config.OnAcquire,
//     where the engine resumes the partition's instances from the store
//     (engine.Engine.ResumeWhere: timers, joins, waits and retries are armed
//     again);
//   - on each partition it gives up or loses, stops committing to it and
//     calls Config.OnRelease, where the engine drops those instances from
//     its memory (engine.Engine.Release).
//
// Agents' reports may reach any engine (natsbus.ServeReports is a queue
// group): Node.ServeReports hands each report to the engine owning its
// instance's partition, wherever it runs.
package natscluster
