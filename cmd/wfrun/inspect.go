package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/scenario"
)

// defaultLimit is how many instances one page of `wfrun inspect` lists.
const defaultLimit = 50

var statuses = []string{string(record.StatusRunning), string(record.StatusCompleted), string(record.StatusFailed), string(record.StatusCanceled)}

// listing is what `wfrun inspect` without an instance lists: a filter and
// a page.
type listing struct {
	status, workflow, state string
	limit                   int
	after                   string
}

func inspectCmd() *cobra.Command {
	var (
		store storeFlags
		out   output
		dead  bool
		list  listing
	)
	cmd := &cobra.Command{
		Use:   "inspect (--store FILE | --nats URL [--prefix P]) [INSTANCE | --dead-letters]",
		Short: "List the instances in a store (newest first), show one instance's history as the step table, or list the dead letters",
		Long: `List the instances in a store, newest first, a page at a time (--limit, then
--after the last id shown for the next page), filtered by --status,
--workflow and --state; or show one instance's history as the step table
(INSTANCE may be any unique prefix of its id); or list the dead letters.

The store is a bbolt file (--store FILE) or the store a prefix names on a
NATS JetStream server (--nats URL, --prefix P): exactly one of the two.
Either is opened read-only: inspect writes nothing to it.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeInstances(&store),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := out.get(cmd)
			if err != nil {
				return err
			}
			if err := store.check(cmd); err != nil {
				return err
			}
			if list.status != "" && !slices.Contains(statuses, list.status) {
				return fmt.Errorf("unknown --status %q (want %s)", list.status, strings.Join(statuses, ", "))
			}
			if len(args) > 0 || dead {
				for _, f := range []string{"status", "workflow", "state", "limit", "after"} {
					if cmd.Flags().Changed(f) {
						return fmt.Errorf("--%s applies to the instance list, not to one instance or the dead letters", f)
					}
				}
			}
			if list.limit < 0 {
				return fmt.Errorf("--limit must not be negative, got %d", list.limit)
			}
			st, err := store.open(cmd.Context(), natsTimeout)
			if err != nil {
				return &checkError{err: err}
			}
			defer st.Close()
			if dead {
				if len(args) > 0 {
					return fmt.Errorf("inspect --dead-letters takes no instance")
				}
				return printDeadLetters(cmd, st, format)
			}
			if len(args) == 0 {
				return listInstances(cmd, st, format, list)
			}
			return showInstance(cmd, st, format, args[0])
		},
	}
	f := cmd.Flags()
	store.add(cmd)
	f.BoolVar(&dead, "dead-letters", false, "list the messages the bus gave up on, oldest first")
	f.StringVar(&list.status, "status", "", "list only instances with this status: "+strings.Join(statuses, ", "))
	f.StringVar(&list.workflow, "workflow", "", "list only instances of this workflow")
	f.StringVar(&list.state, "state", "", "list only instances in this state")
	f.IntVar(&list.limit, "limit", defaultLimit, "list at most this many instances (0: all)")
	f.StringVar(&list.after, "after", "", "list the page after this instance id (the last one of the previous page)")
	addOutput(cmd, &out, "the instance list, or one history entry per line: input for wfrun replay")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(statuses, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("workflow", completeSnapshots(&store, func(s record.Snapshot) string { return s.Workflow }))
	_ = cmd.RegisterFlagCompletionFunc("state", completeSnapshots(&store, func(s record.Snapshot) string { return s.State }))
	_ = cmd.RegisterFlagCompletionFunc("after", completeInstances(&store))
	return cmd
}

// newestFirst sorts instances by creation time, newest first, then by id.
func newestFirst(list []record.Snapshot) {
	slices.SortStableFunc(list, func(a, b record.Snapshot) int {
		return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.ID, b.ID))
	})
}

func listInstances(cmd *cobra.Command, st readStore, format string, l listing) error {
	all, err := st.Instances(cmd.Context())
	if err != nil {
		return &checkError{err: err}
	}
	newestFirst(all)
	list := slices.DeleteFunc(all, func(s record.Snapshot) bool {
		return (l.status != "" && string(s.Status) != l.status) ||
			(l.workflow != "" && s.Workflow != l.workflow) ||
			(l.state != "" && s.State != l.state)
	})
	if l.after != "" {
		i := slices.IndexFunc(list, func(s record.Snapshot) bool { return s.ID == l.after })
		if i < 0 {
			return fmt.Errorf("--after %s: no such instance in this listing", l.after)
		}
		list = list[i+1:]
	}
	more := 0
	if l.limit > 0 && len(list) > l.limit {
		more = len(list) - l.limit
		list = list[:l.limit]
	}
	out := cmd.OutOrStdout()
	next := ""
	if more > 0 {
		next = fmt.Sprintf("%d more; next page: --after %s", more, list[len(list)-1].ID)
	}
	if format != formatTable {
		if next != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), next)
		}
		return newEncoder(out, format).encode(list)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWORKFLOW\tVERSION\tSTATE\tSTATUS\tSTEP\tCREATED\tUPDATED")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\n", s.ID, s.Workflow, s.Version, s.State, s.Status, s.Step, stamp(s.Created), stamp(s.Updated))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintln(out, next)
	}
	return nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// resolveID finds the instance an id or a unique prefix of one names. An
// ambiguous prefix is an error that lists every match.
func resolveID(ctx context.Context, st readStore, arg string) (string, error) {
	all, err := st.Instances(ctx)
	if err != nil {
		return "", err
	}
	newestFirst(all)
	var matches []record.Snapshot
	for _, s := range all {
		if s.ID == arg {
			return arg, nil
		}
		if strings.HasPrefix(s.ID, arg) {
			matches = append(matches, s)
		}
	}
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("%w: %s", record.ErrUnknownInstance, arg)
	case 1:
		return matches[0].ID, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "instance prefix %q is ambiguous; it matches %s:", arg, plural(len(matches), "instance", "instances"))
	for _, s := range matches {
		fmt.Fprintf(&b, "\n  %s  %s  %s  %s  %s", s.ID, s.Workflow, s.State, s.Status, stamp(s.Created))
	}
	return "", fmt.Errorf("%s", b.String())
}

func showInstance(cmd *cobra.Command, st readStore, format, arg string) error {
	ctx, out := cmd.Context(), cmd.OutOrStdout()
	id, err := resolveID(ctx, st, arg)
	if err != nil {
		return &checkError{err: err}
	}
	snap, err := st.Instance(ctx, id)
	if err != nil {
		return &checkError{err: err}
	}
	history, err := st.History(ctx, id)
	if err != nil {
		return &checkError{err: err}
	}
	if format != formatTable {
		enc := newEncoder(out, format)
		for _, e := range history {
			if err := enc.encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintf(out, "instance %s of %s v%d: %s in %s after %s\n", snap.ID, snap.Workflow, snap.Version, snap.Status, snap.State, plural(snap.Step, "step", "steps"))
	fmt.Fprintf(out, "created %s, updated %s\n", stamp(snap.Created), stamp(snap.Updated))
	if p := parentID(snap.ID); p != "" {
		if ps, err := st.Instance(ctx, p); err == nil {
			fmt.Fprintf(out, "child of %s (workflow %s), started by its state %s\n", p, ps.Workflow, childState(snap.ID))
		}
	}
	fmt.Fprintln(out)
	rows, _, _ := scenario.Trace(history)
	writeRows(out, rows)
	writeChildren(ctx, out, st, history)
	if snap.Error != "" {
		fmt.Fprintf(out, "\nerror: %s\n", snap.Error)
	}
	outbox, err := st.Outbox(ctx, id)
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
}

// writeChildren lists the child instances the history's workflow states
// started, with where each is now.
func writeChildren(ctx context.Context, out io.Writer, st readStore, history []record.Entry) {
	first := true
	for _, e := range history {
		if e.Kind != record.KindChild {
			continue
		}
		if first {
			fmt.Fprintf(out, "\nchildren:\n")
			first = false
		}
		where := "not started"
		if cs, err := st.Instance(ctx, e.Detail); err == nil {
			where = fmt.Sprintf("%s in %s after %s", cs.Status, cs.State, plural(cs.Step, "step", "steps"))
		}
		fmt.Fprintf(out, "  %s  workflow %s, from state %s: %s\n", e.Detail, e.Agent, e.State, where)
	}
}

// parentID is the id of the instance whose workflow state started child
// instance id (<parent>/<STATE>/<visit>), "" for any other id.
func parentID(id string) string {
	k := strings.LastIndexByte(id, '/')
	if k < 0 {
		return ""
	}
	if k = strings.LastIndexByte(id[:k], '/'); k < 0 {
		return ""
	}
	return id[:k]
}

// childState is the state in a child instance's id.
func childState(id string) string {
	rest := strings.TrimPrefix(id, parentID(id)+"/")
	state, _, _ := strings.Cut(rest, "/")
	return state
}

func printDeadLetters(cmd *cobra.Command, st readStore, format string) error {
	list, err := st.DeadLetters(cmd.Context())
	if err != nil {
		return &checkError{err: err}
	}
	out := cmd.OutOrStdout()
	if format != formatTable {
		return newEncoder(out, format).encode(list)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tAT\tREASON\tTYPE\tFROM\tTO\tINSTANCE\tSTEP\tERROR")
	for _, d := range list {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", d.Seq, d.At.Format(time.RFC3339), d.Reason, d.Type, d.From, d.To, dash(d.Instance), d.Step, d.LastError)
	}
	return tw.Flush()
}
