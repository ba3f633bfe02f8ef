package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

func runCmd() *cobra.Command {
	var (
		asJSON bool
		store  string
	)
	cmd := &cobra.Command{
		Use:   "run SCENARIO",
		Short: "Replay one scenario: the step table and the verdict (--json: one JSON event per line)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts []engine.Option
			if store != "" {
				st, err := boltstore.Open(store)
				if err != nil {
					return &checkError{err: err}
				}
				defer st.Close()
				// Ids must be unique across runs kept in one file; the
				// scenario's counter would reuse them.
				opts = append(opts, engine.WithStore(st), engine.WithIDs(uuid.NewString))
			}
			rep, err := replayScenario(cmd.Context(), args[0], rules.Load, opts...)
			if err != nil {
				return &checkError{err: err}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, rep); err != nil {
					return err
				}
			} else {
				writeTable(out, rep)
			}
			if !rep.Passed() {
				return failed("scenario %s failed", args[0])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON event per line instead of the table")
	cmd.Flags().StringVar(&store, "store", "", "keep the instance in this durable store file (bbolt) for wfrun inspect")
	return cmd
}

func testCmd() *cobra.Command {
	var junit string
	cmd := &cobra.Command{
		Use:   "test PATH...",
		Short: "Replay every scenario under the paths: a line per scenario and a summary",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := findScenarios(args)
			if err != nil {
				return &checkError{err: err}
			}
			if len(files) == 0 {
				return &checkError{err: fmt.Errorf("no scenarios under %s", strings.Join(args, ", "))}
			}
			out := cmd.OutOrStdout()
			load := cachedLoader()
			var results []testResult
			for _, f := range files {
				res := testResult{file: f}
				rep, err := replayScenario(cmd.Context(), f, load)
				switch {
				case err != nil:
					res.failures = []string{err.Error()}
				default:
					res.name, res.failures, res.steps = rep.Scenario.Name, rep.Failures, rep.Result.Steps
				}
				results = append(results, res)
				if len(res.failures) == 0 {
					fmt.Fprintf(out, "PASS %s (%s, %d steps)\n", f, res.name, res.steps)
					continue
				}
				fmt.Fprintf(out, "FAIL %s (%s)\n", f, res.name)
				for _, msg := range res.failures {
					fmt.Fprintf(out, "     %s\n", msg)
				}
			}
			passed := 0
			for _, r := range results {
				if len(r.failures) == 0 {
					passed++
				}
			}
			fmt.Fprintf(out, "scenarios: %d passed, %d failed\n", passed, len(results)-passed)
			if junit != "" {
				if err := writeJUnit(junit, results); err != nil {
					return &checkError{err: err}
				}
			}
			if passed != len(results) {
				return failed("%d scenarios failed", len(results)-passed)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&junit, "junit", "", "also write a JUnit XML report to this file")
	return cmd
}

type testResult struct {
	file, name string
	steps      int
	failures   []string
}

func replayScenario(ctx context.Context, path string, load scenario.Loader, opts ...engine.Option) (*scenario.Report, error) {
	s, err := scenario.Load(path)
	if err != nil {
		return nil, err
	}
	return scenario.Run(ctx, s, load, opts...)
}

// cachedLoader loads each workflow file once per `wfrun test`.
func cachedLoader() scenario.Loader {
	type loaded struct {
		w   *rules.Workflow
		err error
	}
	cache := map[string]loaded{}
	return func(path string) (*rules.Workflow, error) {
		key := filepath.Clean(path)
		if l, ok := cache[key]; ok {
			return l.w, l.err
		}
		w, err := rules.Load(path)
		cache[key] = loaded{w, err}
		return w, err
	}
}

// findScenarios lists the scenario files under paths: a file is taken as
// given; a folder contributes every *.yaml under a folder named scenarios.
func findScenarios(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && filepath.Base(filepath.Dir(path)) == "scenarios" &&
				(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func writeTable(out io.Writer, rep *scenario.Report) {
	fmt.Fprintf(out, "scenario %q on workflow %s\n\n", rep.Scenario.Name, rep.Workflow.Name)
	writeRows(out, rep.Steps)
	res := rep.Result
	fmt.Fprintf(out, "\nstatus %s", res.Status)
	if res.Outcome != "" {
		fmt.Fprintf(out, ", outcome %s", res.Outcome)
	}
	fmt.Fprintf(out, ", %d steps, %s simulated\n", res.Steps, rep.Duration)
	if res.Err != nil {
		fmt.Fprintf(out, "error: %v\n", res.Err)
	}
	if rep.Passed() {
		fmt.Fprintln(out, "PASS")
		return
	}
	fmt.Fprintln(out, "FAIL")
	for _, f := range rep.Failures {
		fmt.Fprintf(out, "  %s\n", f)
	}
}

// writeRows prints a step table. A step whose conditions failed at run
// time is marked with "!" and each failure is printed under it.
func writeRows(out io.Writer, rows []scenario.Row) {
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATE\tAGENT\tTRIGGER\tRULE\tNEXT\tHANDOFF")
	for _, r := range rows {
		step := fmt.Sprint(r.Step)
		if len(r.ConditionErrors) > 0 {
			step += " !"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", step, r.State, r.Agent, dash(r.Trigger), dash(r.Rule), dash(r.Next), dash(r.Handoff))
	}
	tw.Flush()
	// The failures go under their rows, outside the table's columns.
	lines := strings.SplitAfter(table.String(), "\n")
	io.WriteString(out, lines[0])
	for k, r := range rows {
		io.WriteString(out, lines[k+1])
		for _, ce := range r.ConditionErrors {
			fmt.Fprintf(out, "      ! condition error (counted as false): %s\n", ce)
		}
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeJSON prints the history as one JSON event per line, then the verdict.
func writeJSON(out io.Writer, rep *scenario.Report) error {
	enc := json.NewEncoder(out)
	for _, en := range rep.History {
		if err := enc.Encode(en); err != nil {
			return err
		}
	}
	verdict := map[string]any{
		"kind": "verdict", "scenario": rep.Scenario.Name, "workflow": rep.Workflow.Name,
		"status": rep.Result.Status, "outcome": rep.Result.Outcome, "steps": rep.Result.Steps,
		"passed": rep.Passed(), "failures": rep.Failures,
	}
	if rep.Result.Err != nil {
		verdict["error"] = rep.Result.Err.Error()
	}
	return enc.Encode(verdict)
}

type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func writeJUnit(path string, results []testResult) error {
	suite := junitSuite{Name: "wfrun", Tests: len(results)}
	for _, r := range results {
		c := junitCase{Name: r.name, Classname: r.file}
		if c.Name == "" {
			c.Name = r.file
		}
		if len(r.failures) > 0 {
			suite.Failures++
			c.Failure = &junitFailure{Message: r.failures[0], Text: strings.Join(r.failures, "\n")}
		}
		suite.Cases = append(suite.Cases, c)
	}
	data, err := xml.MarshalIndent(suite, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(data, '\n')...), 0o644)
}
