package main

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/batonhq/baton/scenario"
)

func testCmd() *cobra.Command {
	var (
		junit   string
		pattern string
		out     output
	)
	cmd := &cobra.Command{
		Use:               "test PATH...",
		Short:             "Replay every scenario under the paths: a line per scenario and a summary",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: yamlFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := out.get(cmd)
			if err != nil {
				return err
			}
			var pick *regexp.Regexp
			if pattern != "" {
				re, err := regexp.Compile(pattern)
				if err != nil {
					return fmt.Errorf("--run: %w", err)
				}
				pick = re
			}
			files, err := findScenarios(args)
			if err != nil {
				return &checkError{err: err}
			}
			if len(files) == 0 {
				return &checkError{err: fmt.Errorf("no scenarios under %s", strings.Join(args, ", "))}
			}
			w := cmd.OutOrStdout()
			pal := paletteFor(w)
			load := cachedLoader()
			var results []testResult
			for _, f := range files {
				res, ok := runTest(cmd.Context(), f, load, pick)
				if !ok {
					continue
				}
				results = append(results, res)
				if format != formatTable {
					continue
				}
				took := fmt.Sprintf("%.2fs", res.took.Seconds())
				if res.passed() {
					fmt.Fprintf(w, "%s %s (%s, %s) %s\n", pal.green("PASS"), f, res.name, plural(res.steps, "step", "steps"), took)
					continue
				}
				fmt.Fprintf(w, "%s %s (%s) %s\n", pal.red("FAIL"), f, res.reason, took)
				for _, msg := range res.details {
					fmt.Fprintf(w, "     %s\n", msg)
				}
			}
			if len(results) == 0 {
				return &checkError{err: fmt.Errorf("no scenario under %s matches --run %q", strings.Join(args, ", "), pattern)}
			}
			passed := 0
			for _, r := range results {
				if r.passed() {
					passed++
				}
			}
			if format == formatTable {
				fmt.Fprintf(w, "scenarios: %d passed, %d failed\n", passed, len(results)-passed)
			} else if err := newEncoder(w, format).encode(summarize(results, passed)); err != nil {
				return err
			}
			if junit != "" {
				if err := writeJUnit(junit, results); err != nil {
					return &checkError{err: err}
				}
			}
			if passed != len(results) {
				return failed("%s failed", plural(len(results)-passed, "scenario", "scenarios"))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&junit, "junit", "", "also write a JUnit XML report to this file")
	addOutput(cmd, &out, "every scenario's result, then the counts")
	cmd.Flags().StringVar(&pattern, "run", "", "replay only the scenarios whose path or name matches this regular expression")
	return cmd
}

type testResult struct {
	file, name string
	steps      int
	took       time.Duration
	reason     string   // why it failed, for the FAIL line; "" when it passed
	details    []string // what follows the FAIL line
	failures   []string // every failure, for JUnit
}

func (r testResult) passed() bool { return r.reason == "" }

// testSummary is the -o json form of a `wfrun test`.
type testSummary struct {
	Scenarios []testReport `json:"scenarios"`
	Passed    int          `json:"passed"`
	Failed    int          `json:"failed"`
}

type testReport struct {
	File     string   `json:"file"`
	Name     string   `json:"name"`
	Passed   bool     `json:"passed"`
	Steps    int      `json:"steps"`
	Seconds  float64  `json:"seconds"`
	Reason   string   `json:"reason,omitempty"`
	Failures []string `json:"failures"`
}

func summarize(results []testResult, passed int) testSummary {
	sum := testSummary{Scenarios: []testReport{}, Passed: passed, Failed: len(results) - passed}
	for _, r := range results {
		sum.Scenarios = append(sum.Scenarios, testReport{
			File: r.file, Name: r.name, Passed: r.passed(), Steps: r.steps, Seconds: r.took.Seconds(),
			Reason: r.reason, Failures: append([]string{}, r.failures...),
		})
	}
	return sum
}

// runTest replays one scenario for `wfrun test`; ok is false when pick
// leaves it out.
func runTest(ctx context.Context, file string, load scenario.Loader, pick *regexp.Regexp) (res testResult, ok bool) {
	res = testResult{file: file}
	begin := time.Now()
	s, err := scenario.Load(file)
	if err == nil {
		res.name = s.Name
	}
	if pick != nil && !pick.MatchString(file) && (res.name == "" || !pick.MatchString(res.name)) {
		return res, false
	}
	var rep *scenario.Report
	if err == nil {
		rep, err = scenario.Run(ctx, s, load)
	}
	res.took = time.Since(begin)
	switch {
	case err != nil:
		res.reason, res.details = loadFailure(err)
		res.failures = append([]string{res.reason}, res.details...)
	case !rep.Passed():
		res.failures = rep.Failures
		if len(rep.Failures) == 1 {
			res.reason = rep.Failures[0]
		} else {
			res.reason = plural(len(rep.Failures), "failure", "failures")
			res.details = rep.Failures
		}
	default:
		res.steps = rep.Result.Steps
	}
	return res, true
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
		if !r.passed() {
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
