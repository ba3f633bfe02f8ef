// Package jspeers starts the official A2A and MCP JavaScript SDKs as the
// real peers of Baton's protocol tests: the node scripts of this folder,
// with the modules its lock file pins.
package jspeers

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// install serialises npm ci between the tests of one package.
var install sync.Mutex

// Dir is this folder's path.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Script is the path of a script of this folder.
func Script(name string) string { return filepath.Join(Dir(), name) }

// Node returns the node binary, with the modules installed (npm ci once
// when they are missing). Without node the test is skipped: the protocol
// peers need it, and CI installs it.
func Node(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the A2A and MCP peer tests run the official JavaScript SDKs with it")
	}
	install.Lock()
	defer install.Unlock()
	if _, err := os.Stat(filepath.Join(Dir(), "node_modules", "@a2a-js", "sdk", "package.json")); err == nil {
		if _, err := os.Stat(filepath.Join(Dir(), "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil {
			return node
		}
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("the peers' node_modules are missing and npm is not installed: run npm ci in internal/jspeers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = Dir()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", Dir(), err, out)
	}
	return node
}
