package rules

import "fmt"

// Link resolves the children of w, a workflow loaded on its own (Load,
// Parse), as LoadSet does for a set: each workflow state calls the
// workflow lookup returns for its name. It checks what LoadSet checks:
// the state names a workflow lookup knows, the rules leaving it name
// terminal states of that child (or error, timeout), and w does not reach
// itself through its children (those lookup returns, as they are linked).
// Every problem is returned in one *LoadError; lint findings join
// w.Warnings. A host that serves the workflows of a directory links each
// caller to the version of each child it would start.
func Link(w *Workflow, lookup func(name string) (*Workflow, bool)) error {
	var diags []Diagnostic
	for _, st := range w.States {
		if !st.Calls() {
			continue
		}
		target, ok := lookup(st.Child.Workflow)
		if !ok || target == nil {
			diags = append(diags, Diagnostic{File: w.File, Line: st.Child.Pos.Line, Col: st.Child.Pos.Col, Severity: SeverityError,
				Message: fmt.Sprintf("state %q calls unknown workflow %q", st.Name, st.Child.Workflow)})
			continue
		}
		st.Child.Target = target
		diags = append(diags, childRules(w, st, target)...)
		if reaches(target, w, map[*Workflow]bool{}) {
			diags = append(diags, Diagnostic{File: w.File, Line: st.Child.Pos.Line, Col: st.Child.Pos.Col, Severity: SeverityError,
				Message: fmt.Sprintf("state %q makes workflow %q reach itself through its children", st.Name, w.Name)})
		}
	}
	if len(diags) > 0 { // childRules returns errors only
		return &LoadError{Diagnostics: sortDiagnostics(diags)}
	}
	return nil
}

// reaches reports whether from is w, by name, or calls it through its
// linked children.
func reaches(from, w *Workflow, seen map[*Workflow]bool) bool {
	if from.Name == w.Name {
		return true
	}
	if seen[from] {
		return false
	}
	seen[from] = true
	for _, st := range from.States {
		if t := childOf(st); t != nil && reaches(t, w, seen) {
			return true
		}
	}
	return false
}
