package engine

import (
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/merge"
)

// Metrics are the engine's counters since it started.
type Metrics struct {
	// Resolutions counts merges of parallel replies; Conflicts those the
	// strategy could not resolve (outcome conflict); Disagreements those
	// whose replies did not all agree.
	Resolutions, Conflicts, Disagreements int64
	// ResolutionTime is the total time spent deciding merges, and
	// ResolutionMax the longest one.
	ResolutionTime, ResolutionMax time.Duration
	// JoinWait is the total time from fan-out to merge.
	JoinWait time.Duration
	// ConditionErrors counts the rule conditions that failed at run time
	// (each counted as false); a Prometheus collector exposes it as
	// baton_condition_errors_total.
	ConditionErrors int64
	// Running is how many instances this engine has started or resumed
	// that have not finished (waiting ones included); a Prometheus
	// collector exposes it as baton_instances_running.
	Running int64
}

type metrics struct {
	resolutions, conflicts, disagreements atomic.Int64
	resolutionNanos, resolutionMax        atomic.Int64
	joinWaitNanos                         atomic.Int64
	conditionErrors                       atomic.Int64
	running                               atomic.Int64
}

func (m *metrics) resolution(d merge.Decision, wait, took time.Duration) {
	m.resolutions.Add(1)
	if !d.Resolved {
		m.conflicts.Add(1)
	}
	if d.Conflict {
		m.disagreements.Add(1)
	}
	m.resolutionNanos.Add(int64(took))
	m.joinWaitNanos.Add(int64(wait))
	for {
		cur := m.resolutionMax.Load()
		if int64(took) <= cur || m.resolutionMax.CompareAndSwap(cur, int64(took)) {
			break
		}
	}
}

// Metrics returns a snapshot of the engine's counters.
func (e *Engine) Metrics() Metrics {
	m := &e.metrics
	return Metrics{
		Resolutions: m.resolutions.Load(), Conflicts: m.conflicts.Load(), Disagreements: m.disagreements.Load(),
		ResolutionTime: time.Duration(m.resolutionNanos.Load()), ResolutionMax: time.Duration(m.resolutionMax.Load()),
		JoinWait:        time.Duration(m.joinWaitNanos.Load()),
		ConditionErrors: m.conditionErrors.Load(),
		Running:         m.running.Load(),
	}
}
