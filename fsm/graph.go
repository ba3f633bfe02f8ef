package fsm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/batonhq/baton/rules"
)

// Mermaid draws the workflow as a Mermaid stateDiagram-v2. Every rule is an
// edge from each of its source states, labelled with its trigger, condition,
// priority and target agent; parallel states show their agents, join and
// merge; the on_limit state carries a note. A state's box shows its name
// with its description in brackets (`state "NAME (agent x)" as NAME`):
// Mermaid draws a description given as `NAME : text` instead of the name.
// The output is deterministic.
func Mermaid(w *rules.Workflow) string {
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	fmt.Fprintf(&b, "    [*] --> %s\n", w.Initial)
	for _, s := range w.States {
		if lines := stateLines(s); len(lines) > 0 {
			label := s.Name + " (" + strings.Join(lines, " · ") + ")"
			fmt.Fprintf(&b, "    state \"%s\" as %s\n", mermaidEscape(label), s.Name)
		}
	}
	for _, r := range w.Rules {
		label := mermaidEscape(edgeLabel(w, r))
		for _, src := range r.Sources {
			fmt.Fprintf(&b, "    %s --> %s : %s\n", src, r.Next, label)
		}
	}
	for _, s := range w.States {
		if s.Terminal {
			fmt.Fprintf(&b, "    %s --> [*]\n", s.Name)
		}
	}
	if w.Limits.OnLimit != "" {
		fmt.Fprintf(&b, "    note right of %s : on_limit, entered from any state when a limit is hit\n", w.Limits.OnLimit)
	}
	return b.String()
}

// DOT draws the workflow as a Graphviz digraph with the same content as
// Mermaid. The output is deterministic.
func DOT(w *rules.Workflow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", strconv.Quote(w.Name))
	b.WriteString("    rankdir=LR;\n")
	b.WriteString("    node [shape=box, style=rounded];\n")
	b.WriteString("    \"__start\" [shape=point, label=\"\"];\n")
	for _, s := range w.States {
		lines := append([]string{s.Name}, stateLines(s)...)
		attrs := ""
		switch {
		case s.Terminal:
			attrs = ", shape=doublecircle, style=solid"
		case s.Parallel():
			attrs = ", shape=box3d, style=solid"
		case s.Waits():
			attrs = ", shape=octagon, style=solid"
		case s.Iterates():
			attrs = ", shape=box3d, style=dashed"
		case s.Calls():
			attrs = ", shape=component, style=solid"
		}
		fmt.Fprintf(&b, "    %s [label=%s%s];\n", strconv.Quote(s.Name), dotLabel(lines), attrs)
	}
	fmt.Fprintf(&b, "    \"__start\" -> %s;\n", strconv.Quote(w.Initial))
	for _, r := range w.Rules {
		label := dotLabel([]string{edgeLabel(w, r)})
		for _, src := range r.Sources {
			fmt.Fprintf(&b, "    %s -> %s [label=%s];\n", strconv.Quote(src), strconv.Quote(r.Next), label)
		}
	}
	if w.Limits.OnLimit != "" {
		b.WriteString("    \"__any\" [shape=plaintext, label=\"any state\"];\n")
		fmt.Fprintf(&b, "    \"__any\" -> %s [style=dashed, label=\"on_limit\"];\n", strconv.Quote(w.Limits.OnLimit))
	}
	b.WriteString("}\n")
	return b.String()
}

// stateLines describes a state under its name: its agent, for a parallel
// state its agents, join and merge, for a wait state its signals and timeout.
func stateLines(s *rules.State) []string {
	switch {
	case s.Terminal:
		return nil
	case s.Parallel():
		lines := []string{"parallel: " + strings.Join(s.Agents, ", ")}
		if j := s.Join; j != nil {
			join := "join " + j.Strategy
			if j.Strategy == "quorum" {
				join += " " + strconv.Itoa(j.Quorum)
			}
			if j.Timeout > 0 {
				join += ", timeout " + j.Timeout.String()
			}
			if j.OnPartial != "" {
				join += ", on_partial " + j.OnPartial
			}
			lines = append(lines, join)
		}
		if s.Merge != "" {
			lines = append(lines, "merge "+s.Merge)
		}
		return lines
	case s.Waits():
		wait := "wait for " + strings.Join(s.Wait.Signals, " | ")
		if s.Timeout > 0 {
			wait += ", timeout " + s.Timeout.String()
		}
		return []string{wait}
	case s.Calls():
		call := "workflow " + s.Child.Workflow
		if s.Timeout > 0 {
			call += ", timeout " + s.Timeout.String()
		}
		return []string{call}
	case s.Iterates():
		f := s.Foreach
		each := fmt.Sprintf("foreach %s: agent %s, %d at once", strings.Join(strings.Fields(f.Items.Source), " "), f.Agent, f.MaxConcurrency)
		if f.Tolerate > 0 {
			each += ", tolerate " + strconv.Itoa(f.Tolerate)
			if f.TolerateIsPercent {
				each += "%"
			}
		}
		return []string{each}
	default:
		return []string{"agent " + s.Agent}
	}
}

// edgeLabel is "trigger [condition] pN → agent".
func edgeLabel(w *rules.Workflow, r *rules.Rule) string {
	var b strings.Builder
	b.WriteString(strings.Join(r.Triggers, " | "))
	if r.Condition != nil {
		b.WriteString(" [")
		b.WriteString(strings.Join(strings.Fields(r.Condition.Source), " "))
		b.WriteString("]")
	}
	fmt.Fprintf(&b, " p%d", r.Priority)
	switch next, _ := w.State(r.Next); {
	case r.To != "":
		b.WriteString(" → ")
		b.WriteString(r.To)
	case next != nil && next.Parallel():
		b.WriteString(" ⇉ ")
		b.WriteString(strings.Join(next.Agents, ", "))
	case next != nil && next.Iterates():
		b.WriteString(" ⇉ each ")
		b.WriteString(next.Foreach.Agent)
	}
	return b.String()
}

var mermaidReplacer = strings.NewReplacer(
	"#", "#35;", "\"", "#quot;", "<", "#lt;", ">", "#gt;", ";", "#59;", "\n", " ",
)

func mermaidEscape(s string) string { return mermaidReplacer.Replace(s) }

func dotLabel(lines []string) string {
	for i, l := range lines {
		q := strconv.Quote(l)
		lines[i] = q[1 : len(q)-1]
	}
	return "\"" + strings.Join(lines, "\\n") + "\""
}
