package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/rules"
)

// exploreResult is the -o json form of `wfrun explore`.
type exploreResult struct {
	File     string               `json:"file"`
	Seed     uint64               `json:"random_seed"`
	Report   *check.ExploreReport `json:"report"`
	Scenario string               `json:"scenario,omitempty"`
}

func exploreCmd() *cobra.Command {
	var (
		runs        int
		seed        uint64
		properties  []string
		allowLimits bool
		dir         string
		workers     int
		out         output
	)
	cmd := &cobra.Command{
		Use:               "explore FILE",
		Short:             "Run random instances on the scenario clock; shrink the first that breaks a property to a scenario",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: yamlFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := out.get(cmd)
			if err != nil {
				return err
			}
			if runs < 1 {
				return fmt.Errorf("--runs must be at least 1, got %d", runs)
			}
			w, err := rules.LoadBeside(args[0])
			if err != nil {
				var le *rules.LoadError
				if errors.As(err, &le) {
					for _, d := range le.Diagnostics {
						fmt.Fprintln(cmd.OutOrStdout(), d.String())
					}
					return failed("%s: invalid workflow", args[0])
				}
				return &checkError{err: err}
			}
			rep, err := check.Explore(cmd.Context(), w, check.ExploreOptions{
				Runs: runs, Seed: seed, Properties: properties, AllowLimits: allowLimits, Workers: workers, Path: args[0],
			})
			if err != nil {
				return err // a property that does not compile is a usage error
			}
			res := exploreResult{File: args[0], Seed: seed, Report: rep}
			if v := rep.Violation; v != nil {
				path, err := check.WriteViolation(v, check.Check(w), seed, dir)
				if err != nil {
					return &checkError{err: err}
				}
				res.Scenario = path
			}
			w2 := cmd.OutOrStdout()
			if format != formatTable {
				if err := newEncoder(w2, format).encode(res); err != nil {
					return err
				}
			} else {
				writeExplore(w2, res)
			}
			if rep.Violation != nil {
				return failed("%s: %s", args[0], rep.Violation.Property)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&runs, "runs", 1000, "how many random instances to run")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "the seed of the draws: the same seed makes the same runs")
	cmd.Flags().StringArrayVar(&properties, "property", nil, "an expression over the finished instance (status, outcome, context, usage, steps, visits) that must be true; repeatable")
	cmd.Flags().BoolVar(&allowLimits, "allow-limits", false, "a limit hit is no violation")
	cmd.Flags().StringVar(&dir, "scenarios", "explore-failures/scenarios", "where the shrunk scenario of a violation is written")
	cmd.Flags().IntVar(&workers, "workers", 0, "runs at once (default: one per core); the result does not depend on it")
	addOutput(cmd, &out, "the runs, the violation and the coverage")
	return cmd
}

func writeExplore(w interface{ Write([]byte) (int, error) }, res exploreResult) {
	rep := res.Report
	if v := rep.Violation; v != nil {
		fmt.Fprintf(w, "violation of %s: %s\n", v.Property, res.Scenario)
		fmt.Fprintf(w, "  run %d (--seed %d): %s\n", v.Run, res.Seed, v.Message)
		fmt.Fprintf(w, "  shrunk to %s: %s\n", plural(v.Replies, "reply", "replies"), strings.Join(v.States, " -> "))
	} else {
		fmt.Fprintf(w, "%s: %d runs, no violation\n", res.File, rep.Runs)
	}
	fmt.Fprintln(w, rep.Coverage.String())
}
