package main

import (
	"runtime"
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
