package busprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/transport"
)

// Source is what the collector reads; *bus.Bus implements it.
type Source interface {
	// Metrics returns a consistent snapshot of the bus's figures.
	Metrics() transport.Snapshot
}

var _ Source = (*bus.Bus)(nil)

// Option configures a Collector.
type Option func(*config)

type config struct {
	namespace   string
	constLabels prometheus.Labels
}

// WithNamespace replaces the metric name prefix "baton".
func WithNamespace(ns string) Option { return func(c *config) { c.namespace = ns } }

// WithConstLabels adds labels to every metric, such as the bus's name when a
// process runs several.
func WithConstLabels(l prometheus.Labels) Option { return func(c *config) { c.constLabels = l } }

// counter is one cumulative figure of the snapshot.
type counter struct {
	desc *prometheus.Desc
	get  func(*transport.Snapshot) uint64
}

// gauge is one current figure of the snapshot.
type gauge struct {
	desc *prometheus.Desc
	get  func(*transport.Snapshot) int
}

// Collector is a prometheus.Collector over a bus's snapshots. It takes one
// snapshot per scrape.
type Collector struct {
	src          Source
	counters     []counter
	deadByReason *prometheus.Desc
	queued       *prometheus.Desc
	gauges       []gauge
	held         *prometheus.Desc
	dropRatio    *prometheus.Desc
	depth        *prometheus.Desc
	capacity     *prometheus.Desc
	awaitingAck  *prometheus.Desc
	latency      *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a collector reading src. Register it yourself, or use
// Register.
func NewCollector(src Source, opts ...Option) *Collector {
	cfg := config{namespace: "baton"}
	for _, o := range opts {
		o(&cfg)
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(cfg.namespace, "bus", name), help, labels, cfg.constLabels)
	}
	c := &Collector{
		src:          src,
		deadByReason: desc("messages_dead_lettered_total", "Messages moved to the dead-letter queue, by reason.", "reason"),
		queued:       desc("messages_queued", "Accepted messages waiting to be received in a mailbox."),
		held:         desc("dead_letters_held", "Dead letters currently held in the queue."),
		dropRatio:    desc("drop_ratio", "Dead-lettered messages over accepted messages."),
		depth:        desc("queue_depth", "Messages queued in an agent's mailbox.", "agent", "agent_type"),
		capacity:     desc("queue_capacity", "Capacity of an agent's mailbox.", "agent", "agent_type"),
		awaitingAck:  desc("awaiting_ack", "Received requires_ack messages not yet acknowledged.", "agent", "agent_type"),
		latency:      desc("latency_seconds", "Latency of bus operations.", "op"),
	}
	for _, g := range []struct {
		name, help string
		get        func(*transport.Snapshot) int
	}{
		{"messages_in_flight", "Received requires_ack messages not yet acknowledged.", func(s *transport.Snapshot) int { return s.InFlight }},
		{"idempotency_keys", "Idempotency keys remembered.", func(s *transport.Snapshot) int { return s.IdempotencyKeys }},
	} {
		c.gauges = append(c.gauges, gauge{desc: desc(g.name, g.help), get: g.get})
	}
	for _, k := range []struct {
		name, help string
		get        func(*transport.Snapshot) uint64
	}{
		{"messages_accepted_total", "Messages accepted by the bus (sent).", func(s *transport.Snapshot) uint64 { return s.Accepted }},
		{"messages_delivered_total", "Messages delivered to a receiver.", func(s *transport.Snapshot) uint64 { return s.Delivered }},
		{"messages_expired_total", "Messages whose TTL ran out before delivery.", func(s *transport.Snapshot) uint64 { return s.Expired }},
		{"validation_errors_total", "Messages refused as invalid.", func(s *transport.Snapshot) uint64 { return s.ValidationErrors }},
		{"handoffs_total", "HANDOFF messages queued.", func(s *transport.Snapshot) uint64 { return s.Handoffs }},
		{"requeued_total", "Dead letters sent again.", func(s *transport.Snapshot) uint64 { return s.Requeued }},
		{"discarded_total", "Dead letters discarded.", func(s *transport.Snapshot) uint64 { return s.Discarded }},
		{"acks_total", "Acknowledgements sent.", func(s *transport.Snapshot) uint64 { return s.Acks }},
		{"redeliveries_total", "requires_ack messages delivered again after an ack timeout or a nack.", func(s *transport.Snapshot) uint64 { return s.Redeliveries }},
		{"nacks_total", "Messages handed back with Nack.", func(s *transport.Snapshot) uint64 { return s.Nacks }},
		{"rejects_total", "Messages refused for good with Reject.", func(s *transport.Snapshot) uint64 { return s.Rejects }},
		{"duplicates_total", "Sends acknowledged without delivery for a repeated idempotency key.", func(s *transport.Snapshot) uint64 { return s.Duplicates }},
	} {
		c.counters = append(c.counters, counter{desc: desc(k.name, k.help), get: k.get})
	}
	return c
}

// Register creates a collector over src and registers it on reg.
func Register(reg prometheus.Registerer, src Source, opts ...Option) (*Collector, error) {
	if reg == nil {
		return nil, ErrNoRegistry
	}
	if src == nil {
		return nil, ErrNoSource
	}
	c := NewCollector(src, opts...)
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	return c, nil
}

// Describe sends the descriptors of every metric the collector reports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, k := range c.counters {
		ch <- k.desc
	}
	for _, g := range c.gauges {
		ch <- g.desc
	}
	for _, d := range []*prometheus.Desc{c.deadByReason, c.queued, c.held, c.dropRatio, c.depth, c.capacity, c.awaitingAck, c.latency} {
		ch <- d
	}
}

// Collect takes one snapshot of the bus and sends its figures.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Metrics()
	for _, k := range c.counters {
		ch <- prometheus.MustNewConstMetric(k.desc, prometheus.CounterValue, float64(k.get(&s)))
	}
	for reason, n := range s.DeadLettersByReason {
		ch <- prometheus.MustNewConstMetric(c.deadByReason, prometheus.CounterValue, float64(n), string(reason))
	}
	for _, g := range c.gauges {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(g.get(&s)))
	}
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(s.Queued))
	ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(s.DeadLettersHeld))
	ch <- prometheus.MustNewConstMetric(c.dropRatio, prometheus.GaugeValue, s.DropRate())
	for _, a := range s.Agents {
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(a.Depth), a.Agent, a.Type)
		ch <- prometheus.MustNewConstMetric(c.capacity, prometheus.GaugeValue, float64(a.Capacity), a.Agent, a.Type)
		ch <- prometheus.MustNewConstMetric(c.awaitingAck, prometheus.GaugeValue, float64(a.AwaitingAck), a.Agent, a.Type)
	}
	for _, l := range []struct {
		op string
		s  transport.LatencySummary
	}{
		{"send", s.Send}, {"receive", s.Receive}, {"wait", s.Wait}, {"handoff", s.Handoff},
		{"ack", s.Ack},
	} {
		ch <- prometheus.MustNewConstSummary(c.latency, l.s.Count, l.s.Sum.Seconds(), map[float64]float64{
			0.5: l.s.P50.Seconds(), 0.95: l.s.P95.Seconds(), 0.99: l.s.P99.Seconds(),
		}, l.op)
	}
}
