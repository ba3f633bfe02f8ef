package engineprom_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/engine/engineprom"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// Mount the engine's figures: register the collector, give its Observe to
// the engine, and watch the engine for the running instances.
func Example() {
	w, err := rules.Parse("hello.yaml", []byte(`workflow: hello
initial: GREETING
agents: {greeter: {}}
states:
  GREETING: {agent: greeter}
  DONE: {terminal: true}
rules:
  - {id: greeted, from: greeter, trigger: greeted, next: DONE}
`))
	if err != nil {
		panic(err)
	}
	greeter := registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: "greeted"}, nil
	})
	agents, err := engine.NewRegistry(w, map[string]registry.Handler{"greeter": greeter})
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	m, err := engineprom.Register(reg)
	if err != nil {
		panic(err)
	}
	eng, err := engine.New(w, agents, engine.WithObserver(m.Observe))
	if err != nil {
		panic(err)
	}
	defer eng.Close()
	stop := m.Watch(eng)
	defer stop()

	ctx := context.Background()
	inst, err := eng.Start(ctx, nil)
	if err != nil {
		panic(err)
	}
	if _, err := inst.Wait(ctx); err != nil {
		panic(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range fams {
		fmt.Println(f.GetName(), len(f.GetMetric()))
	}
	// Output:
	// baton_instance_duration_seconds 1
	// baton_instances_finished_total 1
	// baton_instances_running 1
	// baton_instances_started_total 1
	// baton_step_duration_seconds 1
}
