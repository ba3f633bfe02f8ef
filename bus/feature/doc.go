// Package feature holds the message-layer features a transport does not
// need to carry work: topics, broadcast, request/reply and correlation,
// conversations, rate limits, circuit breakers, backpressure signals,
// dead-letter processing and sender retries. Each is a decorator over any
// transport.Transport (the in-memory bus or natsbus), in a file of its own,
// and is itself a transport.Transport, so that a program composes the ones
// it wants:
//
//	b := bus.New()
//	var tr transport.Transport = feature.NewBreakers(b, feature.BreakerSettings{}, clock.Real())
//
// No feature is checked inside a transport's send path: a program that
// composes none pays for none.
//
// The order of composition matters where a decorator uses what only the
// transport itself offers:
//   - routing (topics, broadcast, request/reply, conversations):
//     NewConversations directly over the transport, then NewTopics,
//     NewBroadcaster and NewRequests (Example_routing);
//   - Retry (retry.go), sender retries of a full mailbox, directly over the
//     transport, whose offers (transport.Offerer) it uses;
//   - NewPressureGauge reads the transport's room (transport.RoomTeller);
//     breakers go outside the rate limiter, the gauge inside it;
//   - DeadLetters (dlqprocess.go), dead-letter processing, audit and
//     alerts, listens to the transport's dead letters from anywhere.
//
// A decorator passes on the Transport methods only: the optional
// transport.RoomTeller and transport.Offerer of the transport it wraps are
// not visible through it, so an engine given a decorated transport neither
// checks the first agent's room before a start nor offers the work it
// sends again (a full mailbox dead-letters it). Give an engine the
// transport itself where those matter; the decorators serve the programs
// that send and take messages themselves.
package feature
