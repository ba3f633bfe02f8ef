package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/batonhq/baton/bus/busprom"
	"github.com/batonhq/baton/engine/engineprom"
)

// metrics are the server's Prometheus figures: the engines' (fed by their
// events, see package engineprom), the bus's, Go's and the process's.
type metrics struct {
	reg     *prometheus.Registry
	engines *engineprom.Collector
}

func newMetrics(figures busprom.Source) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), engines: engineprom.New()}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		busprom.NewCollector(figures),
		m.engines,
	)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
