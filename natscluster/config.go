package natscluster

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/nats-io/nuid"
	"go.uber.org/zap"
)

// Config says how a node takes part in the cluster. The zero value of every
// field is a sensible default.
type Config struct {
	// Name names this engine in the cluster; each engine needs its own
	// (default: a random one, new at every start). Letters, digits, '-' and
	// '_' only.
	Name string
	// LeaseTTL is how long an engine's partitions stay its own after its
	// last heartbeat (default 10s): when an engine dies, its instances
	// continue on the others after LeaseTTL plus the time to resume them.
	LeaseTTL time.Duration
	// Heartbeat is how often a node renews its membership and balances the
	// partitions (default LeaseTTL/5).
	Heartbeat time.Duration
	// Replicas is how many servers keep the lease bucket (default 1; use 3
	// on a cluster).
	Replicas int
	// Timeout bounds each request to the server (default 5s).
	Timeout time.Duration
	// OnAcquire is called, on the node's goroutine, with the partitions the
	// node has just taken and fenced: the engine resumes their instances
	// there (engine.Engine.ResumeWhere). Reports for them wait until it
	// returns. After an error the node keeps the partitions fenced and
	// calls OnAcquire with them again after a pause (100ms, doubling up to
	// 5s), until it succeeds or the lease is lost; it must resume what a
	// failed call left out. It is also called every Recheck with
	// every partition the node owns, so that an instance that left the
	// engine's memory (a commit that failed for good) is resumed: it must
	// leave alone what the engine already runs, as ResumeWhere does.
	OnAcquire func(ctx context.Context, partitions []int) error
	// OnRelease is called, on the node's goroutine, with the partitions the
	// node gave up or lost, once the store commits none of their
	// instances: the engine drops them from its memory there
	// (engine.Engine.Release).
	OnRelease func(partitions []int)
	// Recheck is how often OnAcquire is called again with every partition
	// the node owns (default 30s).
	Recheck time.Duration
	// Logger receives the node's log (default zap.NewNop()).
	Logger *zap.Logger
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = "engine-" + nuid.Next()
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 10 * time.Second
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = c.LeaseTTL / 5
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Second
	}
	if c.OnAcquire == nil {
		c.OnAcquire = func(context.Context, []int) error { return nil }
	}
	if c.OnRelease == nil {
		c.OnRelease = func([]int) {}
	}
	if c.Recheck == 0 {
		c.Recheck = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Validate reports the first field Start cannot use. Start applies the
// defaults first, so a zero field is never refused.
func (c Config) Validate() error {
	switch {
	case !nameRE.MatchString(c.Name):
		return &ConfigError{Field: "Name", Reason: fmt.Sprintf("%q: want 1 to 64 letters, digits, '-' or '_'", c.Name)}
	case c.LeaseTTL < 10*time.Millisecond:
		return &ConfigError{Field: "LeaseTTL", Reason: fmt.Sprintf("%v: want at least 10ms", c.LeaseTTL)}
	case c.Heartbeat <= 0 || c.Heartbeat > c.LeaseTTL/2:
		return &ConfigError{Field: "Heartbeat", Reason: fmt.Sprintf("%v: want above 0 and at most half of LeaseTTL (%v)", c.Heartbeat, c.LeaseTTL)}
	case c.Replicas < 1 || c.Replicas > 5:
		return &ConfigError{Field: "Replicas", Reason: fmt.Sprintf("%d: want 1 to 5", c.Replicas)}
	case c.Recheck < 0:
		return &ConfigError{Field: "Recheck", Reason: "must not be negative"}
	case c.Timeout < 0:
		return &ConfigError{Field: "Timeout", Reason: "must not be negative"}
	}
	return nil
}
