package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/batonhq/baton/boltstore"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/scenario"
)

func runCmd() *cobra.Command {
	var (
		out   output
		store string
	)
	cmd := &cobra.Command{
		Use:               "run SCENARIO",
		Short:             "Replay one scenario: the step table and the verdict (-o json: one JSON event per line)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: yamlFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := out.get(cmd)
			if err != nil {
				return err
			}
			var opts []engine.Option
			start := scenario.Epoch
			if store != "" {
				st, err := boltstore.Open(store)
				if err != nil {
					return &checkError{err: err}
				}
				defer st.Close()
				// Ids must be unique across runs kept in one file; the
				// scenario's counter would reuse them. The instance's times
				// start at the wall clock's now, so that inspect shows when
				// it ran.
				opts = append(opts, engine.WithStore(st), engine.WithIDs(uuid.NewString))
				start = time.Now().UTC()
			}
			rep, err := replayScenario(cmd.Context(), args[0], rules.LoadBeside, start, opts...)
			if err != nil {
				return workflowError(cmd, err)
			}
			w := cmd.OutOrStdout()
			if format == formatTable {
				writeTable(w, rep, paletteFor(w))
			} else if err := writeEvents(newEncoder(w, format), rep); err != nil {
				// Not a usage error: the run produced what JSON cannot hold.
				return &checkError{err: fmt.Errorf("run -o %s: %w", format, err)}
			}
			if !rep.Passed() {
				return failed("scenario %s failed", args[0])
			}
			return nil
		},
	}
	addOutput(cmd, &out, "one event per line, then the verdict")
	cmd.Flags().StringVar(&store, "store", "", "keep the instance in this durable store file (bbolt) for wfrun inspect")
	return cmd
}

// workflowError reports a workflow or scenario that does not load: each
// problem on a line of its own, starting with its position, as editors and
// CI logs expect, then what it means. Other errors are left to main.
func workflowError(cmd *cobra.Command, err error) error {
	reason, details := loadFailure(err)
	if len(details) == 0 {
		return &checkError{err: err}
	}
	if cmd.Name() != "run" {
		reason = "the workflow does not load: " + plural(len(details), "error", "errors")
	}
	errOut := cmd.ErrOrStderr()
	for _, d := range details {
		fmt.Fprintln(errOut, d)
	}
	fmt.Fprintf(errOut, "wfrun: %s\n", reason)
	return failed("%s", reason)
}

// loadFailure says why a scenario could not be run, in a few words, and
// lists each problem on a line of its own.
func loadFailure(err error) (reason string, details []string) {
	var le *rules.LoadError
	if errors.As(err, &le) {
		for _, d := range le.Diagnostics {
			details = append(details, d.String())
		}
		return "its workflow does not load: " + plural(len(details), "error", "errors"), details
	}
	var se *scenario.Error
	if errors.As(err, &se) {
		details = strings.Split(err.Error(), "\n")
		return "the scenario does not load: " + plural(len(details), "error", "errors"), details
	}
	return err.Error(), nil
}

func replayScenario(ctx context.Context, path string, load scenario.Loader, start time.Time, opts ...engine.Option) (*scenario.Report, error) {
	s, err := scenario.Load(path)
	if err != nil {
		return nil, err
	}
	return scenario.RunFrom(ctx, s, load, start, opts...)
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
		w, err := rules.LoadBeside(path)
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

func writeTable(out io.Writer, rep *scenario.Report, pal palette) {
	fmt.Fprintf(out, "scenario %q on workflow %s\n\n", rep.Scenario.Name, rep.Workflow.Name)
	writeRows(out, rep.Steps)
	res := rep.Result
	fmt.Fprintf(out, "\nstatus %s", res.Status)
	if res.Outcome != "" {
		fmt.Fprintf(out, ", outcome %s", res.Outcome)
	}
	fmt.Fprintf(out, ", %s, %s simulated\n", plural(res.Steps, "step", "steps"), rep.Duration)
	if res.Err != nil {
		fmt.Fprintf(out, "error: %v\n", res.Err)
	}
	if rep.Passed() {
		fmt.Fprintln(out, pal.green("PASS"))
		return
	}
	fmt.Fprintln(out, pal.red("FAIL"))
	for _, f := range rep.Failures {
		fmt.Fprintf(out, "  %s\n", f)
	}
}

// writeRows prints a step table. A step whose conditions failed at run
// time is marked with "!" and each failure is printed under it.
func writeRows(out io.Writer, rows []scenario.Row) {
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	// A usage column only when some run reported usage: most workflows'
	// agents report none.
	usage := slices.ContainsFunc(rows, func(r scenario.Row) bool { return !r.Usage.IsZero() })
	head := "STEP\tSTATE\tAGENT\tTRIGGER\tRULE\tNEXT\tHANDOFF"
	if usage {
		head += "\tUSAGE"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		step := fmt.Sprint(r.Step)
		if len(r.ConditionErrors) > 0 {
			step += " !"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", step, r.State, r.Agent, dash(r.Trigger), dash(r.Rule), dash(r.Next), dash(r.Handoff))
		if usage {
			line += "\t" + usageCell(r.Usage)
		}
		fmt.Fprintln(tw, line)
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

// usageCell is a run's usage in the step table: input+output tokens and
// the cost when there is one.
func usageCell(u registry.Usage) string {
	if u.IsZero() {
		return "-"
	}
	cell := fmt.Sprintf("%d+%d tokens", u.InputTokens, u.OutputTokens)
	if u.Cost != 0 {
		cell += ", cost " + strconv.FormatFloat(u.Cost, 'f', -1, 64)
	}
	return cell
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeEvents prints the history, one event per line (JSON) or document
// (YAML), then the verdict.
func writeEvents(enc *encoder, rep *scenario.Report) error {
	for _, en := range rep.History {
		if err := enc.encode(en); err != nil {
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
	return enc.encode(verdict)
}
