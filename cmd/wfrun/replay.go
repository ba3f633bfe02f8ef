package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/replay"
	"github.com/batonhq/baton/rules"
)

func replayCmd() *cobra.Command {
	var out output
	cmd := &cobra.Command{
		Use:               "replay HISTORY WORKFLOW",
		Short:             "Re-evaluate a recorded history against a workflow; exit 1 at the first different decision",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: historyThenWorkflow,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := out.get(cmd)
			if err != nil {
				return err
			}
			f, err := os.Open(args[0])
			if err != nil {
				return &checkError{err: err}
			}
			history, err := replay.ReadHistory(f)
			f.Close()
			if err != nil {
				return &checkError{err: err}
			}
			w, err := rules.LoadBeside(args[1])
			if err != nil {
				return workflowError(cmd, err)
			}
			rep, err := replay.Check(w, history)
			if err != nil {
				return &checkError{err: err}
			}
			stdout, verdict := cmd.OutOrStdout(), cmd.OutOrStdout()
			if format != formatTable {
				// The report is the data; the verdict is for the person
				// reading, and would break a JSON or YAML reader.
				verdict = cmd.ErrOrStderr()
				if err := newEncoder(stdout, format).encode(rep); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "STEP\tSTATE\tTRIGGER\tRECORDED\tREPLAYED\t")
				for _, s := range rep.Steps {
					mark := "same"
					if s.Diff != "" {
						mark = "DIFFERENT " + s.Diff
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", s.Step, s.State, s.Trigger, s.Recorded, s.Replayed, mark)
				}
				tw.Flush()
			}
			if d := rep.Divergence; d != nil {
				fmt.Fprintf(verdict, "divergence at step %d (state %s, trigger %s): the %s differs: recorded %s, now %s\n",
					d.Step, d.State, d.Trigger, d.Diff, d.Recorded, d.Replayed)
				return failed("history diverges from %s", args[1])
			}
			fmt.Fprintf(verdict, "no divergence: %s replayed against %s\n", plural(len(rep.Steps), "decision", "decisions"), w.Name)
			return nil
		},
	}
	addOutput(cmd, &out, "the replay report")
	return cmd
}
