// Package agentmain is the main function of the examples' agent programs:
// Go handlers served over NATS by a natsbus Worker, in a process of their
// own, on the server given by $NATS_URL (several URLs of a cluster
// separated by commas).
package agentmain

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go"

	"github.com/batonhq/baton/natsbus"
	"github.com/batonhq/baton/registry"
)

// Main runs the program name with handlers until SIGTERM or Ctrl-C, then
// drains: runs under way finish and report first. It exits 2 on bad
// flags and 1 when NATS cannot be reached.
func Main(name string, handlers map[string]registry.Handler) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Run(ctx, name, handlers, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		if _, ok := err.(usageError); ok {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

// Run is Main with its arguments and output given: flags -agents (which
// of the handlers to serve, comma-separated; default all) and -replicas
// (the copies of each work stream this process creates on a cluster).
// It prints "<name>: taking work" once the worker runs.
func Run(ctx context.Context, name string, handlers map[string]registry.Handler, args []string, out io.Writer) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	only := fs.String("agents", "", "serve only these agents (comma-separated)")
	cfg := natsbus.DefaultConfig()
	fs.IntVar(&cfg.Replicas, "replicas", 1, "copies of each work stream this process creates, on a cluster (as wfrun serve --replicas)")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	serve := handlers
	if *only != "" {
		serve = make(map[string]registry.Handler)
		for _, id := range strings.Split(*only, ",") {
			h, ok := handlers[id]
			if !ok {
				known := make([]string, 0, len(handlers))
				for k := range handlers {
					known = append(known, k)
				}
				slices.Sort(known)
				return usageError{fmt.Errorf("-agents: no agent %q (have %s)", id, strings.Join(known, ", "))}
			}
			serve[id] = h
		}
	}
	url := os.Getenv("NATS_URL")
	if url == "" {
		url = nats.DefaultURL
	}
	// A cluster's servers may come and go: keep reconnecting.
	nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Close()
	tr, err := natsbus.New(ctx, nc, cfg)
	if err != nil {
		return err
	}
	defer tr.Close()
	w, err := natsbus.NewWorker(tr, serve, natsbus.WorkerConfig{})
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(serve))
	for id := range serve {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fmt.Fprintf(out, "%s: taking work for %s from %s\n", name, strings.Join(ids, ", "), url)
	return w.Run(ctx)
}
