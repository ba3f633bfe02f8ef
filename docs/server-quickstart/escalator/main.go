// The escalator, in Go with the natsbus Worker: it takes its work over
// NATS and reports how each run ended. SIGTERM or Ctrl-C drains it.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/nats-io/nats.go"

	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/registry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	url := os.Getenv("NATS_URL")
	if url == "" {
		url = nats.DefaultURL // nats://127.0.0.1:4222
	}
	nc, err := nats.Connect(url)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	tr, err := natsbus.New(ctx, nc, natsbus.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	escalate := registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
		// Page whoever is on call here.
		return registry.Outcome{Trigger: "escalated", Result: map[string]any{"on_call": "ana"}}, nil
	})
	w, err := natsbus.NewWorker(tr, map[string]registry.Handler{"escalator": escalate}, natsbus.WorkerConfig{})
	if err != nil {
		log.Fatal(err)
	}
	log.Print("escalator: taking work")
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
