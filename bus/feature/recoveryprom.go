package feature

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Recovery names the sender retries and the dead-letter processing whose
// figures a RecoveryCollector reports; either may be nil.
type Recovery struct {
	Retry       *Retry
	DeadLetters *DeadLetters
}

// RecoveryCollector is a prometheus.Collector over the figures of Recovery,
// in the bus's namespace: for Retry the counters
// baton_bus_send_retries_total and baton_bus_send_retries_given_up_total and
// the gauge baton_bus_sends_retrying; for DeadLetters the counter
// baton_bus_dead_letters_processed_total by action (retried, stale,
// requeued, discarded), baton_bus_dead_letter_alerts_total,
// baton_bus_dead_letter_passes_total and the gauge
// baton_bus_dead_letters_awaiting_processing. It reads their Stats on each
// scrape. (baton_bus_dead_letters_held, from package busprom, is what the
// transport keeps; awaiting processing is what DeadLetters still holds.)
type RecoveryCollector struct {
	r                          Recovery
	retries, givenUp, retrying *prometheus.Desc
	processed, alerts, passes  *prometheus.Desc
	awaiting                   *prometheus.Desc
}

var _ prometheus.Collector = (*RecoveryCollector)(nil)

// NewRecoveryCollector returns a collector of r's figures, named under
// namespace ("baton" when empty). Register it on a prometheus.Registerer.
func NewRecoveryCollector(r Recovery, namespace string) *RecoveryCollector {
	desc := busDesc(namespace)
	return &RecoveryCollector{
		r:         r,
		retries:   desc("send_retries_total", "Send attempts made after a first one met a full mailbox."),
		givenUp:   desc("send_retries_given_up_total", "Retried sends dead-lettered after waiting."),
		retrying:  desc("sends_retrying", "Sends waiting for their next attempt."),
		processed: desc("dead_letters_processed_total", "Dead letters processing acted on, by action.", "action"),
		alerts:    desc("dead_letter_alerts_total", "Alerts raised because dead letters arrived too fast."),
		passes:    desc("dead_letter_passes_total", "Dead-letter processing passes."),
		awaiting:  desc("dead_letters_awaiting_processing", "Dead letters held for processing."),
	}
}

// Describe sends the descriptors of the figures of the parts given.
func (c *RecoveryCollector) Describe(ch chan<- *prometheus.Desc) {
	if c.r.Retry != nil {
		ch <- c.retries
		ch <- c.givenUp
		ch <- c.retrying
	}
	if c.r.DeadLetters != nil {
		ch <- c.processed
		ch <- c.alerts
		ch <- c.passes
		ch <- c.awaiting
	}
}

// Collect reads the parts' Stats and sends their figures.
func (c *RecoveryCollector) Collect(ch chan<- prometheus.Metric) {
	if r := c.r.Retry; r != nil {
		st := r.Stats()
		ch <- prometheus.MustNewConstMetric(c.retries, prometheus.CounterValue, float64(st.Retries))
		ch <- prometheus.MustNewConstMetric(c.givenUp, prometheus.CounterValue, float64(st.GaveUp))
		ch <- prometheus.MustNewConstMetric(c.retrying, prometheus.GaugeValue, float64(st.Retrying))
	}
	if d := c.r.DeadLetters; d != nil {
		st := d.Stats()
		for _, a := range [...]struct {
			action string
			n      uint64
		}{{"retried", st.Retried}, {"stale", st.Stale}, {"requeued", st.Requeued}, {"discarded", st.Discarded}} {
			ch <- prometheus.MustNewConstMetric(c.processed, prometheus.CounterValue, float64(a.n), a.action)
		}
		ch <- prometheus.MustNewConstMetric(c.alerts, prometheus.CounterValue, float64(st.Alerts))
		ch <- prometheus.MustNewConstMetric(c.passes, prometheus.CounterValue, float64(st.Passes))
		ch <- prometheus.MustNewConstMetric(c.awaiting, prometheus.GaugeValue, float64(st.Held))
	}
}
