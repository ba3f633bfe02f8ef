// Command triage is the support workflow's triage agent, written in Go: it
// takes its work from Baton over NATS with the natsbus Worker, reads the
// customer's message and hands the request to the FAQ agent or the
// booking agent. A request one of them handed back goes to the other.
//
//	NATS_URL=nats://127.0.0.1:4222 go run ./examples/support/triage
//
// It drains on SIGTERM or Ctrl-C: runs under way finish and report first.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go"

	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/registry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		log.Fatal("triage: ", err)
	}
}

func run(ctx context.Context) error {
	url := os.Getenv("NATS_URL")
	if url == "" {
		url = nats.DefaultURL
	}
	nc, err := nats.Connect(url, nats.Name("support-triage"))
	if err != nil {
		return err
	}
	defer nc.Close()
	// The same transport settings as the server's (the defaults).
	tr, err := natsbus.New(ctx, nc, natsbus.DefaultConfig())
	if err != nil {
		return err
	}
	defer tr.Close()
	w, err := natsbus.NewWorker(tr, map[string]registry.Handler{"triage": registry.HandlerFunc(triage)}, natsbus.WorkerConfig{})
	if err != nil {
		return err
	}
	fmt.Printf("triage: taking work from %s\n", url)
	return w.Run(ctx)
}

// bookingWords mark a request for the booking agent.
var bookingWords = []string{"book", "appointment", "visit", "schedule", "come on", "call me"}

// triage decides who takes the request. Its outcome's trigger is what the
// workflow's rules match on: faq or booking.
func triage(_ context.Context, t *registry.Task) (registry.Outcome, error) {
	message, _ := t.Input["message"].(string)
	if strings.TrimSpace(message) == "" {
		// Not retried: another try cannot find a message.
		return registry.Outcome{}, registry.Permanent(fmt.Errorf("the request has no message"))
	}
	text := strings.ToLower(message)
	to := "faq"
	for _, w := range bookingWords {
		if strings.Contains(text, w) {
			to = "booking"
			break
		}
	}
	switch t.Context["handed_back_by"] {
	case "faq":
		to = "booking"
	case "booking":
		to = "faq"
	}
	return registry.Outcome{Trigger: to, Result: map[string]any{"topic": topicOf(text)}}, nil
}

// topicOf is a word for the request, kept in the instance's context.
func topicOf(text string) string {
	for _, topic := range []string{"refund", "password", "repair", "delivery", "hours", "visit", "call"} {
		if strings.Contains(text, topic) {
			return topic
		}
	}
	return "other"
}
