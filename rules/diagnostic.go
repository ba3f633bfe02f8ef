package rules

import (
	"cmp"
	"slices"
	"strconv"
)

// Severity tells an error (the workflow does not load) from a warning
// (lint: the workflow loads, `wfrun validate --strict` refuses it).
type Severity int

const (
	// SeverityError is a problem that stops the load.
	SeverityError Severity = iota
	// SeverityWarning is a lint finding on a workflow that loaded.
	SeverityWarning
)

// String returns "error" or "warning".
func (s Severity) String() string {
	if s == SeverityWarning {
		return "warning"
	}
	return "error"
}

// Pos is a 1-based line and column in the workflow file.
type Pos struct {
	Line, Col int
}

// String returns "line:col".
func (p Pos) String() string { return strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col) }

// Diagnostic is one problem found while loading or linting a workflow.
type Diagnostic struct {
	// File is the path or name the workflow was loaded from.
	File string
	// Line and Col are 1-based; Col counts characters, not bytes.
	Line, Col int
	// Severity tells an error from a lint warning.
	Severity Severity
	// Message says what is wrong, without the position.
	Message string
}

// String renders "file:line:col: message", with "warning: " before the
// message of a warning.
func (d Diagnostic) String() string {
	s := d.File + ":" + strconv.Itoa(d.Line) + ":" + strconv.Itoa(d.Col) + ": "
	if d.Severity == SeverityWarning {
		s += "warning: "
	}
	return s + d.Message
}

// sortDiagnostics orders by position, then severity, then message, and drops
// exact duplicates (one mistake reached through two aliases, say).
func sortDiagnostics(ds []Diagnostic) []Diagnostic {
	slices.SortFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Severity, b.Severity),
			cmp.Compare(a.Message, b.Message),
		)
	})
	return slices.Compact(ds)
}
