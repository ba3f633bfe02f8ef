package main

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/record"
)

// yamlFiles completes workflow and scenario files (and folders).
func yamlFiles(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return []cobra.Completion{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

// historyThenWorkflow completes a history file (any file), then a workflow.
func historyThenWorkflow(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 1 {
		return yamlFiles(cmd, args, toComplete)
	}
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeInstances completes instance ids from the store named by --store
// or --nats, newest first, each with its workflow and state.
func completeInstances(store *storeFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if cmd.Name() == "inspect" && len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, s := range storedSnapshots(cmd.Context(), store) {
			if strings.HasPrefix(s.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(s.ID, s.Workflow+" "+s.State+" "+string(s.Status)))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeSnapshots completes the distinct values field takes over the
// instances of the store named by --store or --nats.
func completeSnapshots(store *storeFlags, field func(record.Snapshot) string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, s := range storedSnapshots(cmd.Context(), store) {
			v := field(s)
			if strings.HasPrefix(v, toComplete) && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		slices.Sort(out)
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completionTimeout bounds how long completion waits for a store: a shell
// must not hang on a server that does not answer.
const completionTimeout = time.Second

// storedSnapshots reads the instances of a store for completion: nothing
// when there is no store yet, another process holds the file, or the NATS
// server does not answer in time.
func storedSnapshots(ctx context.Context, store *storeFlags) []record.Snapshot {
	if ctx == nil {
		ctx = context.Background()
	}
	st, err := openForCompletion(ctx, store)
	if err != nil {
		return nil
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*completionTimeout)
	defer cancel()
	list, err := st.Instances(ctx)
	if err != nil {
		return nil
	}
	newestFirst(list)
	return list
}

func openForCompletion(ctx context.Context, store *storeFlags) (readStore, error) {
	switch {
	case store.file != "" && store.nats != "":
		return nil, errors.New("both --store and --nats")
	case store.nats != "":
		return openNATS(ctx, store.nats, store.prefix, completionTimeout)
	case store.file == "":
		return nil, errors.New("no store")
	}
	if _, err := os.Stat(store.file); err != nil {
		return nil, err
	}
	return boltstore.Open(store.file, boltstore.WithTimeout(200*time.Millisecond))
}
