// Package natsbus carries the engine's work to external agents over NATS
// JetStream, so that agents (and engines) can live in other processes and
// on other machines. It has three parts:
//
//   - Transport, the engine.Transport on JetStream: give it to an engine
//     with engine.WithTransport;
//   - ServeReports and Report, the agents' reports to the engines and the
//     engines' answers, by request-reply on ReportsSubject;
//   - Worker, which runs Go handlers (registry.Handler) for agents whose
//     work comes over NATS.
//
// docs/protocol.md describes the protocol for agents in any language.
//
// # The life of a piece of work
//
// OpenMailbox creates the agent's work stream, BATON_WORK_<agent>: a
// work-queue stream whose MaxMsgs is the agent's capacity with DiscardNew,
// so that a full mailbox refuses a send atomically whichever process sends
// (transport.QueueFullError, naming the agent). The capacity counts work waiting
// and work taken but not settled. JetStream has no priorities, so each
// level has its subject, baton.work.<agent>.<level>, and its durable pull
// consumer; TakeWork reads them highest first.
//
// SendWork publishes the message's JSON (transport.Message's own) with its
// idempotency key as Nats-Msg-Id (a key over 256 bytes as "sha256:" and
// the base64 of its hash): JetStream drops a second send within the dedup
// window. TakeWork pulls "no wait" from each level, highest first;
// a level that seems empty while the stream holds work of it is asked
// again, waiting Config.TakeWait, and when every level seemed empty it
// asks again, waiting at each (JetStream tells consumers of new work a
// moment after the send returns). It checks each delivery
// before handing it out: work whose TTL has passed is
// dead-lettered ttl_expired (JetStream's own per-message TTL would remove it
// silently), and work delivered more than MaxDeliveries times (its taker
// died on the last delivery) is dead-lettered max_retries. The server
// redelivers without limit; natsbus counts, because the server's
// max-deliveries advisory reaches only a listener that exists.
//
// A message that requires an ack is held until Ack, Nack or Reject, in a
// map from message id to its delivery, kept by the process that took it.
// Heartbeat sends an in-progress ack. A sweep forgets a delivery one ack
// wait after its ack wait passed and, when it was the last allowed
// delivery, dead-letters it max_retries at once.
//
// Dead letters go to the BATON_DEAD stream, baton.dead.<agent>.<reason>,
// before the message is removed from its work stream: a crash in between
// dead-letters it again, and the Nats-Msg-Id dead.<stream>.<seq> makes
// that a duplicate. Every Transport follows the stream with an ordered
// consumer, so that OnDeadLetter's callbacks hear of every process's dead
// letters (their own at once, as they make them). An agent on a plain
// client that terminates its work is heard of through JetStream's
// terminated advisory, by one Transport of the queue group; the advisory
// names only the stream and sequence, so each Transport remembers the last
// work it stored (sentWork) and answers the others' asks for it, and the
// dead letter holds the work as it was sent.
//
// Metrics are read from the streams and consumers, so that every process
// sees the same accounting: a stream's last sequence counts the work it
// stored, the work it holds is queued or in flight, the rest was delivered
// or dead-lettered.
package natsbus
