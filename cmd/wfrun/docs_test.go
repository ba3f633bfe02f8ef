package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

var (
	yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")
	// fileName is a workflow snippet's first line when the page names the
	// file it belongs in (a child workflow beside its caller).
	fileName = regexp.MustCompile(`^# file: ([a-z0-9_-]+\.yaml)\n`)
)

// firstKey returns the first key of a YAML snippet, skipping comments.
func firstKey(snippet string) string {
	for _, l := range strings.Split(snippet, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, _, _ := strings.Cut(l, ":")
		return k
	}
	return ""
}

// runDocSnippets writes the YAML snippets of a Markdown file to a folder,
// as a user copying them would: a snippet that starts with `workflow:` is a
// complete workflow, saved as workflow.yaml (or under the name its first
// line gives, `# file: NAME.yaml`: a child workflow beside its caller),
// which must pass `wfrun validate --strict`; one that starts with
// `scenario:` is a scenario of the workflow
// before it, saved in scenarios/, which must pass `wfrun run`. Every other
// snippet is a fragment and must at least be valid YAML. The pages share
// one folder, in order: a page's scenario may run against the workflow of
// an earlier page. It returns how many workflows and scenarios ran.
func runDocSnippets(t *testing.T, pages ...string) (workflows, scenarios int) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "scenarios"), 0o755))
	for _, doc := range pages {
		w, s := runPage(t, dir, doc, workflows)
		workflows, scenarios = workflows+w, scenarios+s
	}
	return workflows, scenarios
}

func runPage(t *testing.T, dir, doc string, before int) (workflows, scenarios int) {
	t.Helper()
	src, err := os.ReadFile(doc)
	require.NoError(t, err)
	for i, m := range yamlBlock.FindAllStringSubmatch(string(src), -1) {
		snippet := m[1]
		var v any
		require.NoError(t, yaml.Unmarshal([]byte(snippet), &v), "%s: snippet %d is not valid YAML:\n%s", doc, i+1, snippet)
		switch firstKey(snippet) {
		case "workflow":
			workflows++
			file := filepath.Join(dir, "workflow.yaml")
			if m := fileName.FindStringSubmatch(snippet); m != nil {
				file = filepath.Join(dir, m[1])
			}
			require.NoError(t, os.WriteFile(file, []byte(snippet), 0o644))
			out, errOut, code := wfrun(t, "validate", "--strict", file)
			assert.Equal(t, 0, code, "%s: workflow snippet %d does not validate:\n%s%s", doc, i+1, out, errOut)
		case "scenario":
			scenarios++
			require.Positive(t, before+workflows, "%s: scenario snippet %d comes before any workflow", doc, i+1)
			file := filepath.Join(dir, "scenarios", fmt.Sprintf("snippet%d.yaml", i+1))
			require.NoError(t, os.WriteFile(file, []byte(snippet), 0o644))
			out, errOut, code := wfrun(t, "run", file)
			assert.Equal(t, 0, code, "%s: scenario snippet %d fails against the workflow before it:\n%s%s", doc, i+1, out, errOut)
		}
	}
	return workflows, scenarios
}

// TestReadme_SnippetsRunAsShown: the README's workflow and scenario run as
// a reader would copy them.
func TestReadme_SnippetsRunAsShown(t *testing.T) {
	workflows, scenarios := runDocSnippets(t, "../../README.md")
	assert.Equal(t, 1, workflows, "the README shows one workflow")
	assert.Equal(t, 1, scenarios, "the README shows one scenario")
}

// TestDocs_SnippetsRunAsShown does the same for every page under docs/;
// the scenario reference's example runs against the workflow reference's.
func TestDocs_SnippetsRunAsShown(t *testing.T) {
	workflows, scenarios := runDocSnippets(t, "../../docs/workflow-format.md", "../../docs/scenario-format.md")
	assert.Equal(t, 1, workflows, "the workflow reference shows a complete workflow")
	assert.Equal(t, 1, scenarios, "the scenario reference shows a scenario of it")
	pages, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	for _, page := range pages {
		if b := filepath.Base(page); b == "workflow-format.md" || b == "scenario-format.md" {
			continue
		}
		t.Run(filepath.Base(page), func(t *testing.T) { runDocSnippets(t, page) })
	}
}

// TestReadme_OpensWithTheFirstCommands keeps the first commands a newcomer
// runs at the top of the README.
func TestReadme_OpensWithTheFirstCommands(t *testing.T) {
	src, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	head := strings.Join(strings.SplitN(string(src), "\n", 15)[:14], "\n")
	assert.Contains(t, head, "go run ./cmd/wfrun run examples/refund/scenarios/approved.yaml")
	assert.Contains(t, head, "go test -race ./...")
}

// TestDocs_SendNoReaderOutside: the README, docs/ and the examples' READMEs
// point only to what is in the repository.
func TestDocs_SendNoReaderOutside(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	examples, err := filepath.Glob("../../examples/*/README.md")
	require.NoError(t, err)
	pages = append(append(pages, examples...), "../../README.md")
	outside := regexp.MustCompile(`SPEC\.md|SPEC §|shared folder|\bseeds?\b|\b(RF|RT|PRD)-\d+`)
	for _, page := range pages {
		src, err := os.ReadFile(page)
		require.NoError(t, err)
		for i, l := range strings.Split(string(src), "\n") {
			// wfrun explore's --seed is a random seed, not a document.
			l := strings.ReplaceAll(l, "--seed", "--")
			assert.False(t, outside.MatchString(l), "%s:%d refers to a document users do not have: %s", page, i+1, l)
		}
	}
}
