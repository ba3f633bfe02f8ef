package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestServe_RefusesNegativeLimits(t *testing.T) {
	for _, flag := range []string{"--read-timeout=-1s", "--write-timeout=-1s", "--idle-timeout=-1s", "--max-streams=-1"} {
		_, stderr, code := wfrun(t, "serve", "--workflows", t.TempDir(), flag)
		assert.Equal(t, 2, code, flag)
		assert.Contains(t, stderr, "must not be negative", flag)
	}
}
