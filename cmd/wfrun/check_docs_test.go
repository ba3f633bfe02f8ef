package main

import (
	"os"
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
