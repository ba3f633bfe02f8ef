package typescript_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/proctest"
)

// TestNodeClient runs the API client's node tests (tests/client.test.mjs)
// against a wfrun built from this checkout: the node suite starts `wfrun
// serve` itself, on free loopback ports with a token file, and serves the
// workflow's HTTP agents.
func TestNodeClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the TypeScript SDK's tests need it")
	}
	ensureModules(t)
	bin := filepath.Join(t.TempDir(), "wfrun")
	proctest.Run(t, "../..", nil, "go", "build", "-o", bin, "./cmd/wfrun")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "tests/client.test.mjs")
	cmd.Env = append(os.Environ(), "BATON_WFRUN="+bin)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test tests/client.test.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("node --test tests/client.test.mjs: %v", err)
	}
}
