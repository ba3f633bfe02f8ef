// Command wfrun validates, draws, runs and tests Baton workflows, and
// inspects the instances kept in a store file.
//
//	wfrun validate FILE... [--strict]
//	wfrun check FILE... [--json] [--scenarios DIR]
//	wfrun explore FILE [--runs N] [--seed S] [--property EXPR]... [--allow-limits] [--scenarios DIR]
//	wfrun graph FILE [--format mermaid|dot]
//	wfrun run SCENARIO [-o table|json|yaml] [--store FILE]
//	wfrun test PATH... [--run REGEX] [--junit FILE]
//	wfrun inspect --store FILE [INSTANCE] [--status S] [--workflow W] [--state S] [--limit N] [--after ID]
//	wfrun replay HISTORY WORKFLOW
//	wfrun schema [workflow|scenario]
//	wfrun completion bash|zsh|fish|powershell
//
// docs/cli.md in the repository describes every command and flag.
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
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil && !isReported(err) {
		fmt.Fprintln(os.Stderr, "wfrun:", err)
	}
	os.Exit(exitCode(err))
}
