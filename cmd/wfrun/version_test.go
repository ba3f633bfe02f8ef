package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersion_FromTheBuildInfo(t *testing.T) {
	out, errOut, code := wfrun(t, "--version")
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "wfrun "), "got %q", out)
	assert.Contains(t, out, runtime.Version(), "the Go version the binary was built with")
	assert.Equal(t, "wfrun "+version()+"\n", out)
}

func TestVersionOf_NamesTheCommit(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "9b7d99c0123456789abcdef"},
		{Key: "vcs.time", Value: "2026-11-24T05:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	assert.Equal(t, "v0.3.0 (commit 9b7d99c01234, 2026-11-24T05:00:00Z, modified) go1.26.0", versionOf(info))
	assert.Equal(t, "(devel) go1.26.0", versionOf(&debug.BuildInfo{GoVersion: "go1.26.0"}))
}

func TestVersion_CommandIsTheFlag(t *testing.T) {
	out, errOut, code := wfrun(t, "version")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "wfrun "+version()+"\n", out)
}

func TestVersionOf_LinkTimeStampWhereTheBuildHasNone(t *testing.T) {
	buildVersion, buildCommit = "v0.4.0", "0123456789abcdef0123"
	t.Cleanup(func() { buildVersion, buildCommit = "", "" })
	assert.Equal(t, "v0.4.0 (commit 0123456789ab) go1.26.0", versionOf(&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}))
	// The build's own facts win.
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "9b7d99c0123456789abcdef"}}}
	assert.Equal(t, "v0.3.0 (commit 9b7d99c01234) go1.26.0", versionOf(info))
}
