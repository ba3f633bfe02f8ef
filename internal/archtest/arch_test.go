package archtest

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the diagram in docs/architecture.md from the real imports")

const (
	module  = "github.com/batonhq/baton"
	root    = "../.."
	docPath = "../../docs/architecture.md"
)

// edge is one arrow of the diagram: from imports to.
type edge struct{ from, to string }

func (e edge) String() string { return e.from + " --> " + e.to }

// node names the diagram's box for an import path of the module, or "" for a
// package the diagram leaves out. A sub-package (bus/busprom,
// engine/transporttest, cmd/wfrun) is drawn as its top directory, and the
// internal helpers, the examples and the docs' sample programs are left out.
func node(importPath string) string {
	rel, ok := strings.CutPrefix(importPath, module+"/")
	if !ok {
		return ""
	}
	top, _, _ := strings.Cut(rel, "/")
	switch top {
	case "internal", "examples", "docs":
		return ""
	}
	return top
}

// realEdges lists the arrows the imports call for: the transitive reduction
// of the module's import graph between diagram nodes, so that an arrow is
// drawn only where no longer path already shows the dependency.
// It also returns every direct import, to tell an arrow that is not an import
// from one that a longer path makes redundant.
func realEdges(t *testing.T) (edges []edge, direct map[string]map[string]bool) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list imports: %v", err)
	}
	cmd := exec.Command(goCmd, "list", "-f", `{{.ImportPath}} {{len .GoFiles}} {{join .Imports " "}}`, "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	direct = map[string]map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		from := node(f[0])
		if from == "" || f[1] == "0" {
			continue
		}
		if direct[from] == nil {
			direct[from] = map[string]bool{}
		}
		for _, imp := range f[2:] {
			if to := node(imp); to != "" && to != from {
				direct[from][to] = true
			}
		}
	}
	reach := func(from string) map[string]bool {
		seen := map[string]bool{}
		stack := []string{from}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for m := range direct[n] {
				if !seen[m] {
					seen[m] = true
					stack = append(stack, m)
				}
			}
		}
		return seen
	}
	for from, tos := range direct {
		for to := range tos {
			implied := false
			for via := range tos {
				if via != to && reach(via)[to] {
					implied = true
					break
				}
			}
			if !implied {
				edges = append(edges, edge{from, to})
			}
		}
	}
	slices.SortFunc(edges, func(a, b edge) int { return strings.Compare(a.String(), b.String()) })
	return edges, direct
}

var (
	solidArrow = regexp.MustCompile(`^\s*(\w+)(?:\[[^\]]*\])?\s*-->\s*(\w+)(?:\[[^\]]*\])?\s*$`)
	otherArrow = regexp.MustCompile(`^\s*(\w+)(?:\[[^\]]*\])?\s*-\.`)
)

// diagram returns the doc's text, the lines of its mermaid block, and the
// block's position in the text.
func diagram(t *testing.T) (doc string, lines []string, start, end int) {
	t.Helper()
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc = string(b)
	const open = "```mermaid\nflowchart TD\n"
	start = strings.Index(doc, open)
	if start < 0 {
		t.Fatalf("%s: no mermaid flowchart", docPath)
	}
	start += len(open)
	n := strings.Index(doc[start:], "```")
	if n < 0 {
		t.Fatalf("%s: the mermaid block is not closed", docPath)
	}
	end = start + n
	return doc, strings.Split(strings.TrimRight(doc[start:end], "\n"), "\n"), start, end
}

// TestDiagramMatchesImports fails when an arrow of the diagram is not an
// import, or when an import is missing from it. Dotted arrows say which
// transport implements the engine's interface; they are not imports and are
// only checked to join drawn packages. Run with -update to redraw it.
func TestDiagramMatchesImports(t *testing.T) {
	want, direct := realEdges(t)
	doc, lines, start, end := diagram(t)
	var got []edge
	var dotted []string
	for _, l := range lines {
		if m := solidArrow.FindStringSubmatch(l); m != nil {
			got = append(got, edge{m[1], m[2]})
			continue
		}
		if otherArrow.MatchString(l) {
			dotted = append(dotted, l)
			continue
		}
		if strings.TrimSpace(l) != "" {
			t.Errorf("%s: a diagram line that is not an arrow: %q", docPath, l)
		}
	}
	if *update {
		var b strings.Builder
		for _, e := range want {
			from := e.from
			if from == "cmd" {
				from = "cmd[cmd/wfrun]"
			}
			fmt.Fprintf(&b, "  %s --> %s\n", from, e.to)
		}
		for _, l := range dotted {
			b.WriteString(l + "\n")
		}
		if err := os.WriteFile(docPath, []byte(doc[:start]+b.String()+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	drawn := map[string]bool{}
	for _, e := range want {
		drawn[e.from], drawn[e.to] = true, true
	}
	for _, l := range dotted {
		f := strings.FieldsFunc(l, func(r rune) bool { return r == ' ' || r == '-' || r == '.' || r == '>' })
		if len(f) < 2 || !drawn[f[0]] || !drawn[f[len(f)-1]] {
			t.Errorf("%s: dotted arrow %q does not join two drawn packages", docPath, strings.TrimSpace(l))
		}
	}
	has := func(es []edge, e edge) bool { return slices.Contains(es, e) }
	for _, e := range want {
		if !has(got, e) {
			t.Errorf("%s: missing arrow %s (a direct import that no longer path shows)", docPath, e)
		}
	}
	for _, e := range got {
		switch {
		case has(want, e):
		case direct[e.from][e.to]:
			t.Errorf("%s: extra arrow %s (an import, but a longer path already shows it)", docPath, e)
		default:
			t.Errorf("%s: extra arrow %s (%s does not import %s)", docPath, e, e.from, e.to)
		}
	}
	if t.Failed() {
		t.Log("redraw with: go test ./internal/archtest -run TestDiagramMatchesImports -update")
	}
}
