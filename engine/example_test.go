package engine_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/bus"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/wire"
)

const exampleWorkflow = `
workflow: greet
initial: DRAFTING
agents:
  writer:   {type: author}
  reviewer: {type: editor}
states:
  DRAFTING:  {agent: writer}
  REVIEWING: {agent: reviewer}
  DONE:      {terminal: true}
rules:
  - id: drafted
    from: writer
    trigger: drafted
    next: REVIEWING
    task: '"Review: " + result.text'
    context: {draft: result.text}
  - id: approved
    from: reviewer
    trigger: approved
    next: DONE
`

func Example() {
	w, err := rules.Parse("greet.yaml", []byte(exampleWorkflow))
	if err != nil {
		fmt.Println(err)
		return
	}
	reg, _ := engine.NewRegistry(w, map[string]registry.Handler{
		"writer": registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "drafted", Result: map[string]any{"text": "hello, " + t.Input["name"].(string)}}, nil
		}),
		"reviewer": registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
			fmt.Printf("reviewer got %q from %s\n", t.Description, t.From)
			return registry.Outcome{Trigger: "approved"}, nil
		}),
	})
	eng, _ := engine.New(w, reg)
	defer eng.Close()

	inst, _ := eng.Start(context.Background(), map[string]any{"name": "world"})
	res, _ := inst.Wait(context.Background())
	fmt.Println(res.Status, res.Outcome, res.Steps, res.Context["draft"])
	// Output:
	// reviewer got "Review: hello, world" from writer
	// completed DONE 2 hello, world
}

// External agents read their hand-offs from the bus and report back.
func ExampleEngine_Report() {
	w, _ := rules.Parse("greet.yaml", []byte(exampleWorkflow))
	reg, _ := engine.NewRegistry(w, nil)     // no handlers: both agents are external
	b := bus.New(bus.WithAckMessages(false)) // carries their work, in this process
	defer b.Close()
	eng, _ := engine.New(w, reg, engine.WithTransport(b))
	defer eng.Close()
	ctx := context.Background()
	inst, _ := eng.Start(ctx, map[string]any{"name": "bus"})

	msg, _ := b.ReceiveWait(ctx, "writer")
	task, _ := wire.Decode(msg) // the work: instance, step, task, context
	_ = eng.Report(ctx, task.InstanceID, task.Step, registry.Outcome{Trigger: "drafted", Result: map[string]any{"text": "hi"}}, nil)
	msg, _ = b.ReceiveWait(ctx, "reviewer")
	fmt.Println(msg.Type, msg.From, "->", msg.To, msg.Content["task_description"])
	task, _ = wire.Decode(msg)
	_ = eng.Report(ctx, task.InstanceID, task.Step, registry.Outcome{Trigger: "approved"}, nil)

	res, _ := inst.Wait(ctx)
	fmt.Println(res.Outcome)
	// Output:
	// HANDOFF writer -> reviewer Review: hi
	// DONE
}

const approvalWorkflow = `
workflow: approval
initial: DRAFTING
agents: {writer: {}}
states:
  DRAFTING: {agent: writer}
  APPROVAL: {wait: {signals: [approved, rejected]}, timeout: 48h}
  PUBLISHED: {terminal: true}
  DROPPED: {terminal: true}
rules:
  - {id: drafted, from: writer, trigger: drafted, next: APPROVAL}
  - {id: approved, from: APPROVAL, trigger: approved, next: PUBLISHED, context: {approver: result.by}}
  - {id: dropped, from: APPROVAL, trigger: [rejected, timeout], next: DROPPED}
`

// A wait state pauses the instance until a person (or another system)
// sends one of its signals.
func ExampleInstance_Signal() {
	w, _ := rules.Parse("approval.yaml", []byte(approvalWorkflow))
	reg, _ := engine.NewRegistry(w, nil)
	b := bus.New(bus.WithAckMessages(false))
	defer b.Close()
	eng, _ := engine.New(w, reg, engine.WithTransport(b))
	defer eng.Close()
	ctx := context.Background()
	inst, _ := eng.Start(ctx, nil)

	msg, _ := b.ReceiveWait(ctx, "writer")
	task, _ := wire.Decode(msg)
	_ = eng.Report(ctx, task.InstanceID, task.Step, registry.Outcome{Trigger: "drafted"}, nil)
	fmt.Println("waiting in", inst.Result().Waiting)

	err := inst.Signal(ctx, "escalated", nil)
	fmt.Println(errors.Is(err, engine.ErrUnexpectedSignal))

	_ = inst.Signal(ctx, "approved", map[string]any{"by": "ana"})
	res, _ := inst.Wait(ctx)
	fmt.Println(res.Outcome, res.Context["approver"], res.Steps)
	// Output:
	// waiting in APPROVAL
	// true
	// PUBLISHED ana 1
}
