package natsstore

import (
	"fmt"
	"regexp"
	"time"

	"go.uber.org/zap"
)

// Config says where and how the store keeps its records. The zero value of
// every field is a sensible default.
type Config struct {
	// Prefix names the store's streams, subjects and bucket (default
	// "baton"): streams <prefix>_steps_<shard> on subjects
	// <prefix>.step.<shard>.<id>, stream <prefix>_dead on <prefix>.dead,
	// key-value bucket
	// <prefix>_workflows. Stores with different prefixes share a server
	// without seeing each other. Letters, digits, '-' and '_' only.
	Prefix string
	// Shards is how many streams hold the steps (default 8), each instance
	// in one chosen by a hash of its id. A server syncs each stream to disk
	// on its own, so with an fsync per write more streams commit more steps
	// per second. The first Open of a prefix fixes the number: later opens
	// use it whatever they configure.
	Shards int
	// Replicas is how many servers of a cluster keep each stream (default
	// 1). Use 3 on a cluster: a write is then acknowledged once a majority
	// holds it, and the store survives the loss of one server.
	Replicas int
	// Timeout bounds each request to the server (default 5s); a commit
	// whose acknowledgement does not arrive in time is sent again under the
	// same message id, which the server deduplicates.
	Timeout time.Duration
	// Attempts is how many times a commit is sent before it fails when no
	// acknowledgement arrives (default 3).
	Attempts int
	// DuplicateWindow is how long the server remembers a commit's message
	// id to deduplicate a resend (default 2m).
	DuplicateWindow time.Duration
	// DeadLetterLimit is how many dead letters the store keeps, the newest
	// (default 0: every one).
	DeadLetterLimit int64
	// Partitions, when above 0, splits the instances into that many
	// partitions (by a hash of the id) whose leases several engines share:
	// the store then commits an instance only while it holds the lease of
	// its partition (see Fence), and the server refuses the commit once
	// another store has taken the partition over. Every store of a prefix
	// must use the same number. 0 (the default) takes no leases: every
	// commit only checks that the instance is as the store last saw it.
	Partitions int
	// Logger receives the store's log (default zap.NewNop()).
	Logger *zap.Logger
}

// DefaultPrefix is the prefix of a Config that names none.
const DefaultPrefix = "baton"

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Shards == 0 {
		c.Shards = 8
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Second
	}
	if c.Attempts == 0 {
		c.Attempts = 3
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = 2 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

const (
	maxShards     = 256
	maxPartitions = 4096
)

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Validate reports the first field Open cannot use. Open applies the
// defaults first, so a zero field is never refused.
func (c Config) Validate() error {
	switch {
	case !prefixRE.MatchString(c.Prefix):
		return &ConfigError{Field: "Prefix", Reason: fmt.Sprintf("%q: want 1 to 64 letters, digits, '-' or '_'", c.Prefix)}
	case c.Shards < 1 || c.Shards > maxShards:
		return &ConfigError{Field: "Shards", Reason: fmt.Sprintf("%d: want 1 to %d", c.Shards, maxShards)}
	case c.Replicas < 1 || c.Replicas > 5:
		return &ConfigError{Field: "Replicas", Reason: fmt.Sprintf("%d: want 1 to 5", c.Replicas)}
	case c.Timeout < 0:
		return &ConfigError{Field: "Timeout", Reason: "must not be negative"}
	case c.Attempts < 0:
		return &ConfigError{Field: "Attempts", Reason: "must not be negative"}
	case c.DuplicateWindow < 0:
		return &ConfigError{Field: "DuplicateWindow", Reason: "must not be negative"}
	case c.Partitions < 0 || c.Partitions > maxPartitions:
		return &ConfigError{Field: "Partitions", Reason: fmt.Sprintf("%d: want 0 to %d", c.Partitions, maxPartitions)}
	case c.DeadLetterLimit < 0:
		return &ConfigError{Field: "DeadLetterLimit", Reason: "must not be negative"}
	}
	return nil
}

// Prefix returns the prefix of the store's streams, subjects and bucket.
func (s *Store) Prefix() string { return s.cfg.Prefix }
