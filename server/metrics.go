package server

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/batonhq/baton/bus/busprom"
)

// metrics are the server's Prometheus figures: the transport's, Go's and the
// process's, and the instances started and finished.
type metrics struct {
	reg      *prometheus.Registry
	started  *prometheus.CounterVec
	finished *prometheus.CounterVec
}

func newMetrics(figures busprom.Source) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_instances_started_total", Help: "Instances started through the API.",
		}, []string{"workflow", "version"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_instances_finished_total", Help: "Instances that completed, failed or were cancelled.",
		}, []string{"workflow", "status", "outcome"}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		busprom.NewCollector(figures),
		m.started, m.finished,
	)
	return m
}

func (m *metrics) observe(ev Event) {
	if ev.Finished() {
		m.finished.WithLabelValues(ev.Workflow, ev.Type, ev.Outcome).Inc()
	}
}

func (m *metrics) start(workflow string, version int) {
	m.started.WithLabelValues(workflow, strconv.Itoa(version)).Inc()
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
