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
// Routing (topics, broadcast, request/reply, conversations): NewConversations directly over the transport, then NewTopics, NewBroadcaster, NewRequests (Example_routing).
// Retry (retry.go): sender retries of a full mailbox; put it directly over the transport, whose offers it uses. DeadLetters (dlqprocess.go): dead-letter processing, audit and alerts.
package feature
