package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/rules"
)

// checkResult is what `wfrun check` found in one file; its JSON form is
// the --json output (docs/checking.md describes it).
type checkResult struct {
	File   string        `json:"file"`
	Error  string        `json:"error,omitempty"` // the file did not load
	Errors []diagnostic  `json:"load_errors,omitempty"`
	Report *check.Report `json:"report,omitempty"`
	// Scenarios lists the scenarios --scenarios wrote, one per uncovered
	// outcome, or why none was written for it.
	Scenarios []writtenScenario `json:"scenarios,omitempty"`
}

type writtenScenario struct {
	Finding string `json:"finding"`
	Path    string `json:"path,omitempty"`
	Skipped string `json:"skipped,omitempty"`
}

func scenarioResults(ws []check.Written) []writtenScenario {
	out := []writtenScenario{}
	for _, w := range ws {
		out = append(out, writtenScenario{Finding: w.Finding.String(), Path: w.Path, Skipped: w.Skipped})
	}
	return out
}

func checkCmd() *cobra.Command {
	var (
		out       output
		scenarios string
	)
	cmd := &cobra.Command{
		Use:               "check FILE...",
		Short:             "Prove what a workflow can do before it runs: uncovered outcomes, traps, hangs, the worst case",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: yamlFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := out.get(cmd)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			var results []checkResult
			bad := 0
			for _, path := range args {
				res := checkFile(path)
				if res.Report == nil || res.Report.Errors() > 0 {
					bad++
				}
				if res.Report != nil && scenarios != "" {
					written, err := check.WriteScenarios(cmd.Context(), res.Report, scenarios)
					if err != nil {
						return &checkError{err: err}
					}
					res.Scenarios = scenarioResults(written)
				}
				results = append(results, res)
				if format == formatTable {
					if err := writeCheck(cmd, res); err != nil {
						return err
					}
				}
			}
			if format != formatTable {
				if err := newEncoder(w, format).encode(results); err != nil {
					return err
				}
			}
			if bad > 0 {
				return failed("%d of %s failed the check", bad, plural(len(args), "workflow", "workflows"))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&scenarios, "scenarios", "", "write a scenario reproducing each uncovered outcome into this directory")
	addOutput(cmd, &out, "one result per file with its report")
	return cmd
}

func checkFile(path string) checkResult {
	res := checkResult{File: path}
	w, err := rules.LoadBeside(path)
	if err != nil {
		var le *rules.LoadError
		if errors.As(err, &le) {
			res.Errors = diagnostics(le.Diagnostics)
			res.Error = "invalid workflow"
			return res
		}
		res.Error = err.Error()
		return res
	}
	res.Report = check.Check(w)
	return res
}

func writeCheck(cmd *cobra.Command, res checkResult) error {
	w := cmd.OutOrStdout()
	if res.Report == nil {
		for _, d := range res.Errors {
			fmt.Fprintf(w, "%s:%d:%d: error: %s\n", d.File, d.Line, d.Col, d.Message)
		}
		fmt.Fprintf(w, "%s: %s\n", res.File, res.Error)
		return nil
	}
	if err := res.Report.WriteText(w); err != nil {
		return err
	}
	for _, s := range res.Scenarios {
		if s.Path != "" {
			fmt.Fprintf(w, "wrote %s (%s)\n", s.Path, s.Finding)
		} else {
			fmt.Fprintf(w, "no scenario for %s: %s\n", s.Finding, s.Skipped)
		}
	}
	return nil
}
