package feature

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Guards names the rate limiter, breakers and pressure gauge whose figures
// a GuardCollector reports; any of them may be nil.
type Guards struct {
	RateLimiter *RateLimiter
	Breakers    *Breakers
	Pressure    *PressureGauge
}

// GuardCollector is a prometheus.Collector over the figures of Guards, in
// the bus's namespace (package busprom reports the transport's own): the
// gauge baton_bus_messages_deferred and the counters
// baton_bus_rate_deferred_total, baton_bus_breaker_refused_total,
// baton_bus_breaker_opened_total, baton_bus_pressure_changes_total and
// baton_bus_backpressure_signals_total; per agent, the gauges
// baton_bus_pressure_level (0 normal, 1 throttled, 2 overloaded) and
// baton_bus_circuit_breaker_state (1 for the breaker's state, 0 for the
// others). It reads the guards' Stats on each scrape.
type GuardCollector struct {
	g                             Guards
	deferred, pressure, breaker   *prometheus.Desc
	rateDeferred, refused, opened *prometheus.Desc
	changes, signals              *prometheus.Desc
}

var _ prometheus.Collector = (*GuardCollector)(nil)

// NewGuardCollector returns a collector of g's figures, named under
// namespace ("baton" when empty). Register it on a prometheus.Registerer.
func NewGuardCollector(g Guards, namespace string) *GuardCollector {
	desc := busDesc(namespace)
	return &GuardCollector{
		g:            g,
		deferred:     desc("messages_deferred", "Messages waiting in senders' outbound queues for rate-limit tokens."),
		pressure:     desc("pressure_level", "Pressure of an agent's mailbox: 0 normal, 1 throttled, 2 overloaded.", "agent"),
		breaker:      desc("circuit_breaker_state", "1 for the current state of an agent's circuit breaker.", "agent", "state"),
		rateDeferred: desc("rate_deferred_total", "Messages that waited for rate-limit tokens."),
		refused:      desc("breaker_refused_total", "Sends refused by an open circuit breaker."),
		opened:       desc("breaker_opened_total", "Times a circuit breaker opened."),
		changes:      desc("pressure_changes_total", "Changes of a mailbox's pressure level."),
		signals:      desc("backpressure_signals_total", "Backpressure notifications sent to senders."),
	}
}

// Describe sends the descriptors of the figures of the guards given.
func (c *GuardCollector) Describe(ch chan<- *prometheus.Desc) {
	if c.g.RateLimiter != nil {
		ch <- c.deferred
		ch <- c.rateDeferred
	}
	if c.g.Breakers != nil {
		ch <- c.refused
		ch <- c.opened
		ch <- c.breaker
	}
	if c.g.Pressure != nil {
		ch <- c.changes
		ch <- c.signals
		ch <- c.pressure
	}
}

// Collect reads the guards' Stats and sends their figures.
func (c *GuardCollector) Collect(ch chan<- prometheus.Metric) {
	if rl := c.g.RateLimiter; rl != nil {
		st := rl.Stats()
		ch <- prometheus.MustNewConstMetric(c.deferred, prometheus.GaugeValue, float64(st.Deferred))
		ch <- prometheus.MustNewConstMetric(c.rateDeferred, prometheus.CounterValue, float64(st.DeferredTotal))
	}
	if br := c.g.Breakers; br != nil {
		st := br.Stats()
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(st.Refused))
		ch <- prometheus.MustNewConstMetric(c.opened, prometheus.CounterValue, float64(st.Opened))
		for _, agent := range guardSortedKeys(st.States) {
			for _, s := range []BreakerState{BreakerClosed, BreakerHalfOpen, BreakerOpen} {
				v := 0.0
				if st.States[agent] == s {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(c.breaker, prometheus.GaugeValue, v, agent, string(s))
			}
		}
	}
	if g := c.g.Pressure; g != nil {
		st := g.Stats()
		ch <- prometheus.MustNewConstMetric(c.changes, prometheus.CounterValue, float64(st.Changes))
		ch <- prometheus.MustNewConstMetric(c.signals, prometheus.CounterValue, float64(st.Signals))
		for _, agent := range guardSortedKeys(st.Levels) {
			ch <- prometheus.MustNewConstMetric(c.pressure, prometheus.GaugeValue, float64(st.Levels[agent]), agent)
		}
	}
}

// busDesc returns a maker of descriptors named namespace_bus_<name>
// ("baton" when namespace is empty), the names the collectors of this
// package share with package busprom.
func busDesc(namespace string) func(name, help string, labels ...string) *prometheus.Desc {
	if namespace == "" {
		namespace = "baton"
	}
	return func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "bus", name), help, labels, nil)
	}
}

// guardSortedKeys returns m's keys in order, so that a scrape reads the same
// way twice.
func guardSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
