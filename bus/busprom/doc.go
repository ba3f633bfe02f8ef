// Package busprom exposes a bus's metrics to Prometheus. The bus keeps its
// figures in its own dependency-free core (transport.Snapshot); this adapter reads
// a snapshot on every scrape and reports it as client_golang metrics on a
// registry the caller passes:
//
//	reg := prometheus.NewRegistry()
//	if _, err := busprom.Register(reg, b); err != nil { ... }
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Counters keep the bus's names with a _total suffix (for example
// baton_bus_messages_accepted_total, baton_bus_redeliveries_total,
// baton_bus_duplicates_total, baton_bus_dead_letters_retried_total);
// messages in flight and remembered idempotency keys are gauges; queue
// depths are gauges labelled by agent; latencies are summaries in seconds labelled by op (send, receive,
// wait, handoff, ack) with the 0.5, 0.95 and 0.99
// quantiles of the bus's log-scale histograms.
package busprom
