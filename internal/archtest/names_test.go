package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// declared collects the names the module's non-test Go code declares, in the
// spellings the docs use: `Name`, `pkg.Name`, `Type.Method` and
// `pkg.Type.Method` (an interface's methods count as its type's).
func declared(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	add := func(pkg string, parts ...string) {
		n := strings.Join(parts, ".")
		names[n] = true
		names[pkg+"."+n] = true
		names[parts[len(parts)-1]] = true
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "node_modules" || n == "testdata" || (strings.HasPrefix(n, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := f.Name.Name
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					add(pkg, d.Name.Name)
					continue
				}
				if recv := receiverType(d.Recv.List[0].Type); recv != "" {
					add(pkg, recv, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						add(pkg, s.Name.Name)
						if it, ok := s.Type.(*ast.InterfaceType); ok {
							for _, m := range it.Methods.List {
								for _, n := range m.Names {
									add(pkg, s.Name.Name, n.Name)
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							add(pkg, n.Name)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// receiverType is the name of a method's receiver type, without its pointer
// or type parameters.
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// stdName reports whether a name the module does not declare is the standard
// library's, such as `errors.Is`.
func stdName(t *testing.T, name string) bool {
	t.Helper()
	pkg, _, ok := strings.Cut(name, ".")
	if !ok || node(module+"/"+pkg) != "" && dirExists(filepath.Join(root, pkg)) {
		return false
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to look up %s: %v", name, err)
	}
	return exec.Command(goCmd, "doc", name).Run() == nil
}

func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	// goName is a Go name as prose cites it: `finishRun`, `*CommitError`,
	// `rules.Workflow.Decide`, `Engine.HandleReport()`. A lowercase word
	// without a dot (`outcome`, `stale`) is a value of the files or the
	// protocol, not a Go name, and is not checked.
	goName = regexp.MustCompile(`^\*?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:\(\))?$`)
)

// TestDocNamesExist fails when docs/architecture.md cites a function, type or
// value the code does not declare, so that the walk of one hand-off names the
// functions a reader will find.
func TestDocNamesExist(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	names := declared(t)
	checked := 0
	for i, line := range strings.Split(string(b), "\n") {
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			g := goName.FindStringSubmatch(m[1])
			if g == nil {
				continue
			}
			name := g[1]
			if !strings.Contains(name, ".") && strings.ToLower(name) == name {
				continue
			}
			checked++
			if !names[name] && !stdName(t, name) {
				t.Errorf("%s:%d: `%s` is not declared in the module's code", docPath, i+1, m[1])
			}
		}
	}
	if checked == 0 {
		t.Fatalf("%s: no Go names found to check", docPath)
	}
}
