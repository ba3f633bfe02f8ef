// Command agents runs the refund example's agents (package handlers) in
// a process of their own: they take their work from Baton over NATS.
//
//	NATS_URL=nats://127.0.0.1:4222 go run ./examples/refund/agents [-agents customer,seller] [-replicas 3]
//
// Several of them may run at once, on one machine or many; each run goes
// to one of them. It drains on SIGTERM or Ctrl-C.
package main

import (
	"github.com/batonhq/baton/examples/internal/agentmain"
	"github.com/batonhq/baton/examples/refund/handlers"
)

func main() { agentmain.Main("refund-agents", handlers.All()) }
