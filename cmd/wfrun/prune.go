package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/boltstore"
)

func pruneCmd() *cobra.Command {
	var store, before string
	cmd := &cobra.Command{
		Use:   "prune (--store FILE | --server URL) --before DURATION|RFC3339",
		Short: "Delete the finished instances of a store last updated before a time, with their history and outbox",
		Long: "Delete every completed, failed or canceled instance whose last update is before --before, " +
			"given as a duration ago (720h) or a time (2026-01-02T15:04:05Z), with its history and outbox. " +
			"Running instances are never deleted. With --store, a bbolt file no server has open; with --server " +
			"(or BATON_SERVER), the store of a running server, bbolt or NATS, through its API.",
		Args: cobra.NoArgs,
	}
	c := clientFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		remote := cmd.Flags().Changed("server") || (store == "" && os.Getenv("BATON_SERVER") != "")
		switch {
		case before == "" || (store == "" && !remote):
			return errors.New("prune needs --store FILE or --server URL, and --before DURATION|RFC3339")
		case store != "" && cmd.Flags().Changed("server"):
			return errors.New("prune takes --store FILE or --server URL, not both")
		}
		if err := c.check(); err != nil {
			return err
		}
		cutoff, err := parseBefore(before, time.Now())
		if err != nil {
			return err
		}
		if remote {
			return c.prune(cmd, before, cutoff)
		}
		// Open would create a missing file: a mistyped path is an error.
		if _, err := os.Stat(store); errors.Is(err, fs.ErrNotExist) {
			return &checkError{err: fmt.Errorf("store %s: %w", store, err)}
		}
		st, err := boltstore.Open(store, boltstore.WithTimeout(time.Second))
		if errors.Is(err, boltstore.ErrLocked) {
			return &checkError{err: fmt.Errorf("%w: a server has the file open; prune through it with --server URL", err)}
		}
		if err != nil {
			return &checkError{err: err}
		}
		defer st.Close()
		n, err := st.Prune(cmd.Context(), cutoff)
		if err != nil {
			return &checkError{err: err}
		}
		return c.print(cmd.OutOrStdout(), pruned{Pruned: n, Before: cutoff.UTC()}, pruned{Pruned: n, Before: cutoff}.table)
	}
	cmd.Flags().StringVar(&store, "store", "", "bbolt store file (no server may have it open)")
	cmd.Flags().StringVar(&before, "before", "", "a duration ago (720h) or an RFC 3339 time")
	return cmd
}

// pruned is what a prune did.
type pruned struct {
	Pruned int       `json:"pruned"`
	Before time.Time `json:"before"`
}

func (p pruned) table(tw *tabwriter.Writer) {
	fmt.Fprintf(tw, "pruned %d finished instances last updated before %s\n", p.Pruned, p.Before.UTC().Format(time.RFC3339))
}

// prune asks the server to prune: a duration goes as it is, so that the
// server's clock counts it back.
func (c *client) prune(cmd *cobra.Command, before string, cutoff time.Time) error {
	body := map[string]string{"before": cutoff.UTC().Format(time.RFC3339Nano)}
	if _, err := time.ParseDuration(before); err == nil {
		body = map[string]string{"older_than": before}
	}
	var got pruned
	if err := c.call(cmd.Context(), "POST", "/v1/prune", body, &got); err != nil {
		return err
	}
	return c.print(cmd.OutOrStdout(), got, got.table)
}

// parseBefore reads --before: a non-negative duration counted back from
// now, or an RFC 3339 time.
func parseBefore(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--before %s: a duration must not be negative", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--before %q: want a duration (720h) or an RFC 3339 time (2026-01-02T15:04:05Z)", s)
	}
	return t, nil
}
