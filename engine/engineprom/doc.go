// Package engineprom exposes the engine's figures to Prometheus: instances
// started, finished and running, how long instances and steps take,
// retries, limit hits, condition errors, and the tokens and cost the runs'
// agents reported. It stays out of the engine's
// core: the collector is fed by the engine's events (Observe is an
// engine.Observer) and reads the running instances of the engines it
// watches on every scrape.
//
//	m := engineprom.New()
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(m)
//	eng, err := engine.New(w, agents, engine.WithObserver(m.Observe))
//	...
//	stop := m.Watch(eng) // baton_instances_running
//	defer stop()
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Labels are few and bounded by the workflow files: workflow, version,
// state, agent, status, outcome, kind, limit, direction. Instance ids are never a
// label. Durations are histograms in seconds. One collector serves any
// number of engines (one per workflow version, say); the bus's own figures
// are package busprom's.
package engineprom
