package natsbus

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// Config holds the settings of a natsbus Transport. Start from
// DefaultConfig, change what you need, and pass it to New, which validates
// it. Every process sharing the streams should use the same settings: the
// streams and consumers are created (or updated) with the settings of the
// process that opens them.
type Config struct {
	// Capacity is the mailbox capacity of an agent opened with capacity 0
	// (1000 by default, as the in-memory bus). It bounds the messages in the agent's work stream,
	// waiting or taken and not yet settled.
	Capacity int
	// AckWait is how long an agent has to ack, nack or reject a message it
	// took (or to send a heartbeat) before the message is delivered again.
	AckWait time.Duration
	// MaxDeliveries is how many times a message is handed out before it is
	// dead-lettered "max_retries".
	MaxDeliveries int
	// Backoff, when set, replaces AckWait for each delivery in turn: the
	// n-th delivery waits Backoff[n-1] (the last value repeats).
	Backoff []time.Duration
	// TakeWait is how long TakeWork waits at each priority level when a
	// first pass found every level empty (1ms by default). JetStream tells a
	// consumer of new work a moment after it acknowledges the send
	// (microseconds; milliseconds on a loaded machine); the wait lets a take
	// see work sent just before it. With TakeWait, a higher level that
	// seems empty while the stream holds work of it is also asked again,
	// waiting, before a lower level's work is handed out: one more request
	// to the server per take that meets an empty level (about 0.1 ms), for
	// a strict priority order. Zero takes only what the consumers already
	// know of. (The Worker never waits: it takes again within milliseconds.)
	TakeWait time.Duration
	// DedupWindow is how long JetStream remembers a message's idempotency
	// key (Nats-Msg-Id) to drop a second send of it.
	DedupWindow time.Duration
	// Storage is where the streams keep their messages: jetstream.FileStorage
	// (the default) or jetstream.MemoryStorage.
	Storage jetstream.StorageType
	// Replicas is the number of copies of each stream in a cluster (1 on a
	// single server; 3 recommended on a cluster).
	Replicas int
	// AsyncPersist makes the server acknowledge a write before it is
	// flushed (jetstream.AsyncPersistMode): faster, and an acknowledged
	// message can be lost on a crash. Off by default. Whether a flushed
	// write is also synced to disk is the server's setting
	// (sync_interval: always; server.Options.SyncAlways), which Baton's
	// embedded server turns on.
	AsyncPersist bool
	// DeadLetterMaxAge bounds how long the dead-letter stream keeps a dead
	// letter (0: for ever). The engine stores the dead letters it is told
	// of; the stream is the shared record the accounting counts.
	DeadLetterMaxAge time.Duration
	// Timeout bounds each call to the server made without a caller's
	// context (Metrics, the ack-wait sweep, advisories).
	Timeout time.Duration
	// Logger receives what natsbus cannot return as an error.
	Logger *zap.Logger
}

// DefaultConfig returns the defaults: capacity 1000, ack wait 30s, 5
// deliveries, take wait 1ms, dedup window 10 minutes, file storage, one replica,
// synchronous persistence, dead letters kept for ever, 5s timeout.
func DefaultConfig() Config {
	return Config{
		Capacity:      1000,
		AckWait:       30 * time.Second,
		MaxDeliveries: 5,
		TakeWait:      time.Millisecond,
		DedupWindow:   10 * time.Minute,
		Storage:       jetstream.FileStorage,
		Replicas:      1,
		Timeout:       5 * time.Second,
		Logger:        zap.NewNop(),
	}
}

// Validate reports the first setting that cannot work, as a *ConfigError.
func (c *Config) Validate() error {
	switch {
	case c.Capacity < 1:
		return &ConfigError{Field: "Capacity", Reason: "must be 1 or more"}
	case c.AckWait < time.Millisecond:
		return &ConfigError{Field: "AckWait", Reason: "must be 1ms or more"}
	case c.MaxDeliveries < 1:
		return &ConfigError{Field: "MaxDeliveries", Reason: "must be 1 or more"}
	case c.TakeWait < 0:
		return &ConfigError{Field: "TakeWait", Reason: "must not be negative"}
	case c.DedupWindow < 0:
		return &ConfigError{Field: "DedupWindow", Reason: "must not be negative"}
	case c.Storage != jetstream.FileStorage && c.Storage != jetstream.MemoryStorage:
		return &ConfigError{Field: "Storage", Reason: "must be FileStorage or MemoryStorage"}
	case c.Replicas < 1 || c.Replicas > 5:
		return &ConfigError{Field: "Replicas", Reason: "must be 1 to 5"}
	case c.DeadLetterMaxAge < 0:
		return &ConfigError{Field: "DeadLetterMaxAge", Reason: "must not be negative"}
	case c.Timeout <= 0:
		return &ConfigError{Field: "Timeout", Reason: "must be positive"}
	case c.Logger == nil:
		return &ConfigError{Field: "Logger", Reason: "is required (zap.NewNop() for none)"}
	}
	for i, d := range c.Backoff {
		if d < time.Millisecond {
			return &ConfigError{Field: fmt.Sprintf("Backoff[%d]", i), Reason: "must be 1ms or more"}
		}
	}
	return nil
}

// ackWait is how long the delivery-th delivery of a message waits for its
// ack.
func (c *Config) ackWait(delivery int) time.Duration {
	if len(c.Backoff) == 0 {
		return c.AckWait
	}
	i := min(max(delivery, 1), len(c.Backoff)) - 1
	return c.Backoff[i]
}
