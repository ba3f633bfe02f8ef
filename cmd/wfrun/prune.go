package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/boltstore"
)

func pruneCmd() *cobra.Command {
	var store, before string
	cmd := &cobra.Command{
		Use:   "prune --store FILE --before DURATION|RFC3339",
		Short: "Delete the finished instances of a store last updated before a time, with their history and outbox",
		Long: "Delete every completed, failed or canceled instance whose last update is before --before, " +
			"given as a duration ago (720h) or a time (2026-01-02T15:04:05Z), with its history and outbox. " +
			"Running instances are never deleted.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if store == "" || before == "" {
				return errors.New("prune needs --store FILE and --before DURATION|RFC3339")
			}
			cutoff, err := parseBefore(before, time.Now())
			if err != nil {
				return err
			}
			// Open would create a missing file: a mistyped path is an error.
			if _, err := os.Stat(store); errors.Is(err, fs.ErrNotExist) {
				return &checkError{err: fmt.Errorf("store %s: %w", store, err)}
			}
			st, err := boltstore.Open(store)
			if err != nil {
				return &checkError{err: err}
			}
			defer st.Close()
			n, err := st.Prune(cmd.Context(), cutoff)
			if err != nil {
				return &checkError{err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pruned %d finished instances last updated before %s\n", n, cutoff.UTC().Format(time.RFC3339))
			return nil
		},
	}
	cmd.Flags().StringVar(&store, "store", "", "bbolt store file")
	cmd.Flags().StringVar(&before, "before", "", "a duration ago (720h) or an RFC 3339 time")
	return cmd
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
