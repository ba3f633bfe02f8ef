package ops_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/ops"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// A Go program's own engine behind the operations layer: a start with an
// id is safe to retry, and another input under the same id is a conflict.
func Example() {
	w, _ := rules.Parse("greet.yaml", []byte(`workflow: greet
initial: HELLO
agents:
  greeter: {}
states:
  HELLO: {agent: greeter}
  DONE: {terminal: true}
rules:
  - {id: greeted, from: greeter, trigger: greeted, next: DONE}
`))
	greeter := registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: "greeted"}, nil
	})
	reg, _ := engine.NewRegistry(w, map[string]registry.Handler{"greeter": greeter})
	store := record.NewMemStore()
	eng, _ := engine.New(w, reg, engine.WithStore(store))
	defer eng.Close()
	o := ops.New(store, ops.NewEngines(eng))

	ctx := context.Background()
	_, created, _ := o.Start(ctx, ops.StartRequest{Workflow: "greet", ID: "g-1", Input: map[string]any{"name": "Ana"}})
	fmt.Println("created:", created)
	_, created, _ = o.Start(ctx, ops.StartRequest{Workflow: "greet", ID: "g-1", Input: map[string]any{"name": "Ana"}})
	fmt.Println("created again:", created)
	_, _, err := o.Start(ctx, ops.StartRequest{Workflow: "greet", ID: "g-1", Input: map[string]any{"name": "Bo"}})
	var oe *ops.Error
	if errors.Is(err, ops.ErrConflict) && errors.As(err, &oe) {
		fmt.Println("conflict on", oe.Field)
	}
	_, err = o.Get(ctx, "nope")
	fmt.Println(errors.Is(err, ops.ErrNotFound))
	// Output:
	// created: true
	// created again: false
	// conflict on input
	// true
}
