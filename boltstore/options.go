package boltstore

import (
	"time"

	"go.uber.org/zap"
)

// Option configures a Store.
type Option func(*config)

type config struct {
	logger  *zap.Logger
	noSync  bool
	batch   int
	timeout time.Duration
}

func defaults() config {
	return config{
		logger:  zap.NewNop(),
		timeout: time.Second,
	}
}

// WithLogger sets the logger (default zap.NewNop()).
func WithLogger(l *zap.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithNoSync skips the fsync at the end of every commit. A commit then
// survives the process being killed, since the operating system still writes
// it out, but not a power loss or a kernel crash, which may also leave the
// file unreadable. Meant for tests and benchmarks.
func WithNoSync(noSync bool) Option { return func(c *config) { c.noSync = noSync } }

// WithBatch groups the commits of concurrent instances, up to size at a
// time, into one transaction and one fsync. A commit never waits for others
// to join it: commits that arrive while a transaction is being written are
// written together by the next one. Each Commit still returns only once its
// own step is durable, so the guarantees do not change; under load the
// store writes several times more steps per second, alone a commit costs
// what it costs without batching. A size of 1 or less turns batching off
// (the default).
func WithBatch(size int) Option { return func(c *config) { c.batch = size } }

// WithTimeout sets how long Open waits for another process to release the
// file (default 1s); past it Open fails with ErrLocked.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	}
}
