package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

// recordSource is where `wfrun scenario` reads a recorded instance: a
// store file, the store on a NATS server, or a server's API.
type recordSource interface {
	Instance(ctx context.Context, id string) (record.Snapshot, error)
	History(ctx context.Context, id string) ([]record.Entry, error)
}

func scenarioCmd() *cobra.Command {
	var (
		workflow, out string
		stored        = &storeFlags{}
		api           = &client{http: &http.Client{}}
	)
	cmd := &cobra.Command{
		Use:   "scenario ID (--server URL | --store FILE | --nats URL [--prefix P]) [--workflow FILE] [--out FILE]",
		Short: "Turn a recorded instance into a scenario that replays it (stdout without --out)",
		Args:  cobra.ExactArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			switch {
			case len(args) > 0:
				return nil, cobra.ShellCompDirectiveNoFileComp
			case stored.file != "" || stored.nats != "":
				return completeInstances(stored)(cmd, args, toComplete)
			case api.base != "":
				return api.completeServerInstances(cmd, args, toComplete)
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var src recordSource
			sources := 0
			for _, set := range []bool{stored.file != "", stored.nats != "", api.base != ""} {
				if set {
					sources++
				}
			}
			switch {
			case sources == 0:
				return errors.New("scenario needs --server URL, --store FILE or --nats URL")
			case sources > 1:
				return errors.New("scenario reads one instance: --server URL, --store FILE or --nats URL, not several")
			case stored.nats == "" && cmd.Flags().Changed("prefix"):
				return errors.New("--prefix applies to --nats")
			case stored.file != "" || stored.nats != "":
				st, err := stored.open(cmd.Context(), natsTimeout)
				if err != nil {
					return &checkError{err: err}
				}
				defer st.Close()
				src = st
			default:
				src = apiSource{api}
			}
			root, children, err := recordings(cmd.Context(), src, args[0])
			if err != nil {
				return &checkError{err: err}
			}
			sc, err := scenario.FromHistory(root, children...)
			if err != nil {
				return &checkError{err: err}
			}
			if sc.Workflow, err = workflowRef(root.Snapshot.Workflow, workflow, out); err != nil {
				return &checkError{err: err}
			}
			if workflow != "" {
				versionNote(cmd.ErrOrStderr(), root.Snapshot, workflow)
			}
			text, err := scenario.Marshal(sc)
			if err != nil {
				return &checkError{err: err}
			}
			snap := root.Snapshot
			text = append([]byte(fmt.Sprintf("# Recorded by wfrun scenario from instance %s (workflow %s, version %d)\n", snap.ID, snap.Workflow, snap.Version)), text...)
			if out == "" {
				_, err = cmd.OutOrStdout().Write(text)
				return err
			}
			if err := os.WriteFile(out, text, 0o644); err != nil {
				return &checkError{err: err}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&api.base, "server", "", "read the instance from this server's API")
	f.StringVar(&api.token, "token", os.Getenv("BATON_TOKEN"), "with --server, an API token (env BATON_TOKEN)")
	f.StringVar(&stored.file, "store", "", "read the instance from this store file (bbolt)")
	f.StringVar(&stored.nats, "nats", "", "read the instance from the store on this NATS server (a URL such as nats://127.0.0.1:4222; several comma-separated)")
	f.StringVar(&stored.prefix, "prefix", natsstore.DefaultPrefix, "with --nats, the prefix of the store's streams and bucket")
	f.StringVar(&workflow, "workflow", "", "the workflow file the scenario names (default <workflow>.yaml)")
	f.StringVar(&out, "out", "", "write the scenario to this file instead of stdout")
	return cmd
}

// recordings reads the instance id and every instance its workflow states
// started, theirs too, as the `child` entries name them.
func recordings(ctx context.Context, src recordSource, id string) (scenario.Recording, []scenario.Recording, error) {
	var all []scenario.Recording
	queue, seen := []string{id}, map[string]bool{id: true}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		snap, err := src.Instance(ctx, cur)
		if err != nil {
			return scenario.Recording{}, nil, err
		}
		history, err := src.History(ctx, cur)
		if err != nil {
			return scenario.Recording{}, nil, err
		}
		all = append(all, scenario.Recording{Snapshot: snap, History: history})
		for _, en := range history {
			if en.Kind == record.KindChild && en.Detail != "" && !seen[en.Detail] {
				seen[en.Detail] = true
				queue = append(queue, en.Detail)
			}
		}
	}
	return all[0], all[1:], nil
}

// workflowRef is the scenario's `workflow:`: file relative to the folder
// the scenario is written in (the current one for stdout), or
// <name>.yaml without a file.
func workflowRef(name, file, out string) (string, error) {
	if file == "" {
		return name + ".yaml", nil
	}
	dir := "."
	if out != "" {
		dir = filepath.Dir(out)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		return "", err
	}
	return filepath.ToSlash(rel), nil
}

// apiSource reads instances through a server's API.
type apiSource struct{ c *client }

// apiInstance is what the API's instance answer holds of a snapshot.
type apiInstance struct {
	ID       string          `json:"id"`
	Workflow string          `json:"workflow"`
	Version  int             `json:"version"`
	Status   string          `json:"status"`
	State    string          `json:"state"`
	Step     int             `json:"step"`
	Outcome  string          `json:"outcome"`
	Error    *string         `json:"error"`
	Context  map[string]any  `json:"context"`
	Usage    registry.Totals `json:"usage"`
}

// Instance reads the instance's snapshot: the API's statuses spell a
// cancelled instance "cancelled" and a running one that waits "waiting".
func (a apiSource) Instance(ctx context.Context, id string) (record.Snapshot, error) {
	var in apiInstance
	if err := a.c.call(ctx, http.MethodGet, instancePath(id), nil, &in); err != nil {
		return record.Snapshot{}, err
	}
	status := record.Status(in.Status)
	switch in.Status {
	case "cancelled":
		status = record.StatusCanceled
	case "waiting":
		status = record.StatusRunning
	}
	snap := record.Snapshot{ID: in.ID, Workflow: in.Workflow, Version: in.Version, Status: status, State: in.State, Step: in.Step, Outcome: in.Outcome, Context: in.Context}
	snap.Usage.Totals = in.Usage
	if in.Error != nil {
		snap.Error = *in.Error
	}
	return snap, nil
}

// History reads the instance's history.
func (a apiSource) History(ctx context.Context, id string) ([]record.Entry, error) {
	var h []record.Entry
	if err := a.c.call(ctx, http.MethodGet, instancePath(id)+"/history", nil, &h); err != nil {
		return nil, err
	}
	return h, nil
}

// versionNote tells, on stderr, when the workflow file is not the one the
// instance ran on: the scenario then shows where the file decides
// otherwise, which may be the point, or a wrong file.
func versionNote(w io.Writer, snap record.Snapshot, file string) {
	wf, err := rules.LoadBeside(file)
	switch {
	case err != nil:
		fmt.Fprintf(w, "note: %s does not load: wfrun test will say why\n", file)
	case wf.Name != snap.Workflow:
		fmt.Fprintf(w, "note: %s is workflow %s; instance %s ran workflow %s\n", file, wf.Name, snap.ID, snap.Workflow)
	case wf.Version != snap.Version:
		fmt.Fprintf(w, "note: %s is version %d of %s; instance %s ran on version %d: wfrun test shows where they decide otherwise\n", file, wf.Version, wf.Name, snap.ID, snap.Version)
	}
}
