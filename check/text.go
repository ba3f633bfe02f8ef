package check

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// summary is the report's last line: `states 9/9 reachable, outcomes
// [APPROVED REJECTED], worst case 14 runs`.
func summary(r *Report) string {
	var outs []string
	for _, t := range r.Terminals {
		if t.Reachable {
			outs = append(outs, t.State)
		}
	}
	var b strings.Builder
	runs := "runs"
	if r.WorstCase.Runs == 1 {
		runs = "run"
	}
	fmt.Fprintf(&b, "states %d/%d reachable, outcomes [%s], worst case %d %s", len(r.Reachable), r.States, strings.Join(outs, " "), r.WorstCase.Runs, runs)
	if r.WorstCase.PerItem > 0 {
		fmt.Fprintf(&b, " + %d per foreach item", r.WorstCase.PerItem)
	}
	if r.WorstCase.Capped {
		b.WriteString(" (max_steps")
		if len(r.WorstCase.Cycle) > 0 {
			b.WriteString(", cycle " + strings.Join(r.WorstCase.Cycle, " -> "))
		}
		b.WriteString(")")
	}
	return b.String()
}

// WriteText prints the report as `wfrun check` does: every finding of the
// workflow and its children as `file:line:col: severity: message` (with the
// path to the state for traps and hangs), the outcomes each reachable
// state produces, a shortest path to each terminal state, and the summary
// line of each workflow.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, f := range r.All() {
		b.WriteString(f.String())
		b.WriteByte('\n')
		if f.Kind == KindTrap || f.Kind == KindHang || f.Kind == KindUncovered {
			if len(f.Path) > 1 {
				fmt.Fprintf(&b, "    path: %s\n", strings.Join(f.Path, " -> "))
			}
		}
	}
	r.writeDetails(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) writeDetails(b *strings.Builder) {
	fmt.Fprintf(b, "%s (%s):\n", r.File, r.Workflow)
	for _, so := range r.Produces {
		parts := make([]string, 0, len(so.Outcomes))
		for _, o := range so.Outcomes {
			p := o.Trigger
			if o.Coverage != Covered {
				p += " (" + string(o.Coverage) + ")"
			}
			parts = append(parts, p)
		}
		fmt.Fprintf(b, "  %s: %s\n", so.State, strings.Join(parts, ", "))
	}
	for _, t := range r.Terminals {
		if t.Reachable {
			fmt.Fprintf(b, "  outcome %s: %s\n", t.State, strings.Join(t.Path, " -> "))
		} else {
			fmt.Fprintf(b, "  outcome %s: unreached\n", t.State)
		}
	}
	fmt.Fprintf(b, "  %s\n", r.Summary)
	for _, c := range r.Children {
		c.writeDetails(b)
	}
}

// literalText renders a witness value as an expression literal.
func literalText(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case nil:
		return "nil"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, literalText(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		return "{}"
	}
	return fmt.Sprint(v)
}
