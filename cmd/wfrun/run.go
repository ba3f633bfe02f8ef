package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes, decided here and nowhere else.
const (
	exitOK     = 0
	exitFailed = 1 // a check failed or a workflow is invalid
	exitUsage  = 2
)

// failure is an error that the command has already reported on its output;
// main only turns it into exit code 1.
type failure struct{ msg string }

func (f *failure) Error() string { return f.msg }

func failed(format string, args ...any) error { return &failure{msg: fmt.Sprintf(format, args...)} }

// checkError is a failed check that main still has to print (exit code 1).
type checkError struct{ err error }

func (c *checkError) Error() string { return c.err.Error() }
func (c *checkError) Unwrap() error { return c.err }

func isReported(err error) bool {
	var f *failure
	return errors.As(err, &f)
}

func exitCode(err error) int {
	var (
		f *failure
		c *checkError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &f), errors.As(err, &c):
		return exitFailed
	default:
		return exitUsage
	}
}

// run is the whole CLI: it parses args, runs one command, and returns nil, a
// *failure/*checkError (exit 1) or any other error (usage, exit 2).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	root := &cobra.Command{
		Use:           "wfrun",
		Short:         "Validate, draw, run and test Baton workflows",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("wfrun {{.Version}}\n")
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(validateCmd(), checkCmd(), exploreCmd(), graphCmd(), runCmd(), testCmd(), inspectCmd(), replayCmd(), scenarioCmd(), schemaCmd(), pruneCmd(), versionCmd())
	root.AddCommand(serverCommands()...)
	root.AddCommand(mcpCmd())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\n%s", err, c.UsageString())
	})
	return root.ExecuteContext(ctx)
}
