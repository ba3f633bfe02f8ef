package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// consoleBlock is a block of docs/checking.md that shows a `wfrun check`
// command and its output.
var consoleBlock = regexp.MustCompile("(?s)```console\n\\$ wfrun (check [^\n]*)\n(.*?)```")

// TestDocs_CheckingOutputIsCurrent runs each command docs/checking.md shows,
// from the repository's root as the page says, and compares its output.
func TestDocs_CheckingOutputIsCurrent(t *testing.T) {
	src, err := os.ReadFile("../../docs/checking.md")
	require.NoError(t, err)
	blocks := consoleBlock.FindAllStringSubmatch(string(src), -1)
	require.GreaterOrEqual(t, len(blocks), 7, "the page shows a run of each finding")
	t.Chdir("../..")
	for _, b := range blocks {
		out, errOut, _ := wfrun(t, strings.Fields(b[1])...)
		assert.Equal(t, b[2], out, "docs/checking.md: the output of `wfrun %s` (stderr %s)", b[1], errOut)
	}
}

// exploreBlock is a block of docs/checking.md that shows a `wfrun explore`
// command and its output.
var exploreBlock = regexp.MustCompile("(?s)```console\n\\$ wfrun (explore [^\n]*)\n(.*?)```")

// TestDocs_ExploreOutputIsCurrent runs each `wfrun explore` docs/checking.md
// shows, in a folder of its own (explore writes its scenario there) that
// sees the repository's check/ folder, and compares its output.
func TestDocs_ExploreOutputIsCurrent(t *testing.T) {
	src, err := os.ReadFile("../../docs/checking.md")
	require.NoError(t, err)
	blocks := exploreBlock.FindAllStringSubmatch(string(src), -1)
	require.NotEmpty(t, blocks)
	checkDir, err := filepath.Abs("../../check")
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Symlink(checkDir, filepath.Join(dir, "check")))
	t.Chdir(dir)
	for _, b := range blocks {
		out, errOut, _ := wfrun(t, strings.Fields(b[1])...)
		assert.Equal(t, b[2], out, "docs/checking.md: the output of `wfrun %s` (stderr %s)", b[1], errOut)
	}
}
