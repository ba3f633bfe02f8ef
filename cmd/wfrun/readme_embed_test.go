package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadme_EmbeddingSnippetBuilds builds the README's embedding program
// as a reader would: in a module of its own that points at this checkout
// (the README's "replace" instructions), offline from the module cache.
func TestReadme_EmbeddingSnippetBuilds(t *testing.T) {
	src, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	program := goBlockAfter(t, string(src), "## Embedding the engine")
	require.Contains(t, program, "package main", "the snippet is a complete program")

	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)

	dir := t.TempDir()
	// The checkout's own requirements keep every version the snippet
	// needs in the module cache, so that the build asks no proxy.
	gomod := strings.Replace(string(mod), "module github.com/batonhq/baton", "module example.com/embed", 1) +
		"\nrequire github.com/batonhq/baton v0.0.0\nreplace github.com/batonhq/baton => " + root + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644))

	cmd := exec.Command("go", "build", "-mod=mod", "-o", filepath.Join(dir, "embed"), ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the README's embedding program does not build:\n%s", out)
}

// goBlockAfter is the first ```go block after heading.
func goBlockAfter(t *testing.T, doc, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, heading)
	require.True(t, ok, "the README has no %q", heading)
	_, rest, ok = strings.Cut(rest, "```go\n")
	require.True(t, ok, "no go block after %q", heading)
	block, _, ok := strings.Cut(rest, "```\n")
	require.True(t, ok, "the go block after %q is not closed", heading)
	return block
}
