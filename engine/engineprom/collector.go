package engineprom

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
)

// Source is an engine whose running instances the collector reports;
// *engine.Engine implements it.
type Source interface {
	// Workflow returns the workflow the engine runs.
	Workflow() *rules.Workflow
	// Metrics returns a snapshot of the engine's counters.
	Metrics() engine.Metrics
}

var _ Source = (*engine.Engine)(nil)

// Option configures a Collector.
type Option func(*config)

type config struct {
	namespace   string
	constLabels prometheus.Labels
	stepBuckets []float64
	instBuckets []float64
}

// WithNamespace replaces the metric name prefix "baton".
func WithNamespace(ns string) Option { return func(c *config) { c.namespace = ns } }

// WithConstLabels adds labels to every metric.
func WithConstLabels(l prometheus.Labels) Option { return func(c *config) { c.constLabels = l } }

// WithStepBuckets sets the buckets, in seconds, of
// baton_step_duration_seconds (default 5ms to 10 minutes).
func WithStepBuckets(b []float64) Option { return func(c *config) { c.stepBuckets = b } }

// WithInstanceBuckets sets the buckets, in seconds, of
// baton_instance_duration_seconds (default 100ms to a week).
func WithInstanceBuckets(b []float64) Option { return func(c *config) { c.instBuckets = b } }

// Default histogram buckets: a step is a model call or a tool (milliseconds
// to minutes); an instance may wait days for a person.
var (
	defaultStepBuckets     = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	defaultInstanceBuckets = []float64{0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 86400, 7 * 86400}
)

// Collector is a prometheus.Collector of the engine's figures. Observe
// feeds it the engines' events; Watch adds an engine whose running
// instances it reports.
type Collector struct {
	started    *prometheus.CounterVec
	finished   *prometheus.CounterVec
	instDur    *prometheus.HistogramVec
	stepDur    *prometheus.HistogramVec
	retries    *prometheus.CounterVec
	limits     *prometheus.CounterVec
	conditions *prometheus.CounterVec
	tokens     *prometheus.CounterVec
	cost       *prometheus.CounterVec
	running    *prometheus.Desc

	mu      sync.Mutex
	sources map[*watch]struct{}
}

// watch is one engine Watch added; a pointer, so that the same engine
// watched twice is counted twice and stopped once per Watch.
type watch struct{ src Source }

var _ prometheus.Collector = (*Collector)(nil)

// New returns a collector. Register it, pass Observe to every engine with
// engine.WithObserver, and Watch the engines.
func New(opts ...Option) *Collector {
	cfg := config{namespace: "baton", stepBuckets: defaultStepBuckets, instBuckets: defaultInstanceBuckets}
	for _, o := range opts {
		o(&cfg)
	}
	name := func(n string) string { return prometheus.BuildFQName(cfg.namespace, "", n) }
	return &Collector{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("instances_started_total"), Help: "Instances started.", ConstLabels: cfg.constLabels,
		}, []string{"workflow", "version"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("instances_finished_total"), Help: "Instances that completed, failed or were cancelled; outcome is the terminal state, or the failure's kind.", ConstLabels: cfg.constLabels,
		}, []string{"workflow", "status", "outcome"}),
		instDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name("instance_duration_seconds"), Help: "Time from an instance's start to its end.", ConstLabels: cfg.constLabels, Buckets: cfg.instBuckets,
		}, []string{"workflow", "status"}),
		stepDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name("step_duration_seconds"), Help: "Time from a run's work being sent to its agent's report.", ConstLabels: cfg.constLabels, Buckets: cfg.stepBuckets,
		}, []string{"workflow", "state", "agent"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("retries_total"), Help: "Failed runs scheduled for another attempt, by the failure's kind.", ConstLabels: cfg.constLabels,
		}, []string{"workflow", "state", "agent", "kind"}),
		limits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("limit_hits_total"), Help: "Transitions a limit stopped.", ConstLabels: cfg.constLabels,
		}, []string{"workflow", "limit"}),
		conditions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("condition_errors_total"), Help: "Rule conditions that failed at run time (each counted as false).", ConstLabels: cfg.constLabels,
		}, []string{"workflow", "state"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("tokens_total"), Help: "Tokens the runs' agents reported using, input (read) or output (written).", ConstLabels: cfg.constLabels,
		}, []string{"workflow", "agent", "direction"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("cost_total"), Help: "Cost the runs' agents reported, in the unit the workflows budget in.", ConstLabels: cfg.constLabels,
		}, []string{"workflow", "agent"}),
		running: prometheus.NewDesc(name("instances_running"), "Instances started or resumed and not finished (waiting ones included), in the watched engines.", []string{"workflow"}, cfg.constLabels),
		sources: map[*watch]struct{}{},
	}
}

// Register creates a collector and registers it on reg.
func Register(reg prometheus.Registerer, opts ...Option) (*Collector, error) {
	if reg == nil {
		return nil, ErrNoRegistry
	}
	c := New(opts...)
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	return c, nil
}

// Observe counts an engine event; it is an engine.Observer.
func (c *Collector) Observe(ev engine.Event) {
	switch ev.Type {
	case engine.EventInstanceStarted:
		c.started.WithLabelValues(ev.Workflow, strconv.Itoa(ev.Version)).Inc()
	case engine.EventAgentReported:
		c.stepDur.WithLabelValues(ev.Workflow, ev.State, ev.Agent).Observe(ev.Duration.Seconds())
		c.spent(ev)
	case engine.EventRetryScheduled:
		c.retries.WithLabelValues(ev.Workflow, ev.State, ev.Agent, ev.Kind).Inc()
	case engine.EventLimitHit:
		c.limits.WithLabelValues(ev.Workflow, ev.Limit).Inc()
	case engine.EventConditionError:
		c.conditions.WithLabelValues(ev.Workflow, ev.State).Inc()
	case engine.EventCompleted:
		c.end(ev, "completed", ev.Outcome)
	case engine.EventFailed:
		c.end(ev, "failed", ev.Kind)
	case engine.EventCancelled:
		c.end(ev, "cancelled", "cancelled")
	}
}

// spent counts a run's usage. The engine refuses negative or non-finite
// usage, so Add cannot panic; the checks keep a hand-made event from
// making a series appear that no run fed.
func (c *Collector) spent(ev engine.Event) {
	u := ev.Usage
	if u.InputTokens > 0 {
		c.tokens.WithLabelValues(ev.Workflow, ev.Agent, "input").Add(float64(u.InputTokens))
	}
	if u.OutputTokens > 0 {
		c.tokens.WithLabelValues(ev.Workflow, ev.Agent, "output").Add(float64(u.OutputTokens))
	}
	if u.Cost > 0 && !math.IsInf(u.Cost, 1) {
		c.cost.WithLabelValues(ev.Workflow, ev.Agent).Add(u.Cost)
	}
}

func (c *Collector) end(ev engine.Event, status, outcome string) {
	c.finished.WithLabelValues(ev.Workflow, status, outcome).Inc()
	c.instDur.WithLabelValues(ev.Workflow, status).Observe(ev.Duration.Seconds())
}

// Watch adds src to the engines whose running instances the collector
// reports; stop removes it (safe to call twice).
func (c *Collector) Watch(src Source) (stop func()) {
	w := &watch{src: src}
	c.mu.Lock()
	c.sources[w] = struct{}{}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.sources, w)
		c.mu.Unlock()
	}
}

// Describe sends the descriptors of every metric the collector reports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, v := range c.vecs() {
		v.Describe(ch)
	}
	ch <- c.running
}

// Collect sends the counters and histograms, and the running instances of
// the watched engines summed by workflow.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, v := range c.vecs() {
		v.Collect(ch)
	}
	c.mu.Lock()
	running := map[string]int64{}
	for w := range c.sources {
		running[w.src.Workflow().Name] += w.src.Metrics().Running
	}
	c.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(running)) {
		ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, float64(running[name]), name)
	}
}

func (c *Collector) vecs() []prometheus.Collector {
	return []prometheus.Collector{c.started, c.finished, c.instDur, c.stepDur, c.retries, c.limits, c.conditions, c.tokens, c.cost}
}
