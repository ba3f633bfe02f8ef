// Command wfrun validates, draws, runs and tests Baton workflows.
//
//	wfrun validate FILE... [--strict]
//	wfrun graph FILE [--format mermaid|dot]
//
// Exit codes: 0 success, 1 a check failed or a workflow is invalid, 2 usage error.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !isReported(err) {
		fmt.Fprintln(os.Stderr, "wfrun:", err)
	}
	os.Exit(exitCode(err))
}
