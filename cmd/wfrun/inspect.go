package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/scenario"
)

func inspectCmd() *cobra.Command {
	var (
		store  string
		asJSON bool
		dead   bool
	)
	cmd := &cobra.Command{
		Use:   "inspect --store FILE [INSTANCE | --dead-letters]",
		Short: "List the instances in a store, show one instance's history as the step table, or list the dead letters",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if store == "" {
				return fmt.Errorf("inspect needs --store FILE")
			}
			st, err := boltstore.OpenReadOnly(store)
			if err != nil {
				return &checkError{err: err}
			}
			defer st.Close()
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			if dead {
				if len(args) > 0 {
					return fmt.Errorf("inspect --dead-letters takes no instance")
				}
				return printDeadLetters(cmd, st, asJSON)
			}
			if len(args) == 0 {
				list, err := st.Instances(ctx)
				if err != nil {
					return &checkError{err: err}
				}
				if asJSON {
					return json.NewEncoder(out).Encode(list)
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tWORKFLOW\tVERSION\tSTATE\tSTATUS\tSTEP")
				for _, s := range list {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\n", s.ID, s.Workflow, s.Version, s.State, s.Status, s.Step)
				}
				return tw.Flush()
			}
			snap, err := st.Instance(ctx, args[0])
			if err != nil {
				return &checkError{err: err}
			}
			history, err := st.History(ctx, args[0])
			if err != nil {
				return &checkError{err: err}
			}
			if asJSON {
				enc := json.NewEncoder(out)
				for _, e := range history {
					if err := enc.Encode(e); err != nil {
						return err
					}
				}
				return nil
			}
			fmt.Fprintf(out, "instance %s of %s v%d: %s in %s after %d steps\n\n", snap.ID, snap.Workflow, snap.Version, snap.Status, snap.State, snap.Step)
			rows, _, _ := scenario.Trace(history)
			writeRows(out, rows)
			if snap.Error != "" {
				fmt.Fprintf(out, "\nerror: %s\n", snap.Error)
			}
			outbox, err := st.Outbox(ctx, args[0])
			if err != nil {
				return &checkError{err: err}
			}
			if len(outbox) > 0 {
				fmt.Fprintf(out, "\noutbox (sent again on resume until settled):\n")
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "KEY\tKIND\tSTATE\tFROM\tTO\tHANDOFF")
				for _, o := range outbox {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", o.Key, o.Kind, o.State, dash(o.From), o.To, dash(o.HandoffID))
				}
				return tw.Flush()
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&store, "store", "", "the store file (bbolt) to read")
	cmd.Flags().BoolVar(&dead, "dead-letters", false, "list the messages the bus gave up on, oldest first")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: the instance list, or one history entry per line (input for wfrun replay)")
	return cmd
}

func printDeadLetters(cmd *cobra.Command, st *boltstore.Store, asJSON bool) error {
	list, err := st.DeadLetters(cmd.Context())
	if err != nil {
		return &checkError{err: err}
	}
	out := cmd.OutOrStdout()
	if asJSON {
		return json.NewEncoder(out).Encode(list)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tAT\tREASON\tTYPE\tFROM\tTO\tINSTANCE\tSTEP\tERROR")
	for _, d := range list {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", d.Seq, d.At.Format(time.RFC3339), d.Reason, d.Type, d.From, d.To, dash(d.Instance), d.Step, d.LastError)
	}
	return tw.Flush()
}
