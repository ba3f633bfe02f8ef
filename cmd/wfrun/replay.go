package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/replay"
	"github.com/batonhq/baton/rules"
)

func replayCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "replay HISTORY WORKFLOW",
		Short: "Re-evaluate a recorded history against a workflow; exit 1 at the first different decision",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return &checkError{err: err}
			}
			history, err := replay.ReadHistory(f)
			f.Close()
			if err != nil {
				return &checkError{err: err}
			}
			w, err := rules.Load(args[1])
			if err != nil {
				return &checkError{err: err}
			}
			rep, err := replay.Check(w, history)
			if err != nil {
				return &checkError{err: err}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := json.NewEncoder(out).Encode(rep); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
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
				fmt.Fprintf(out, "divergence at step %d (state %s, trigger %s): the %s differs: recorded %s, now %s\n",
					d.Step, d.State, d.Trigger, d.Diff, d.Recorded, d.Replayed)
				return failed("history diverges from %s", args[1])
			}
			fmt.Fprintf(out, "no divergence: %d decisions replayed against %s\n", len(rep.Steps), w.Name)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the replay report as JSON")
	return cmd
}
