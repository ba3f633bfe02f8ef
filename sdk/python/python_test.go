// Package python_test runs the Python SDK's unittest suites from go test:
// it builds wfrun, and the suites start it (`wfrun serve` on free loopback
// ports, with temporary data and workflows) and drive it with the SDK's
// agent server and client. Where python3 is installed a failing Python test
// fails the Go test; only a machine without python3 skips it.
package python_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/proctest"
)

// root is the repository's root.
const root = "../.."

// python3 is the interpreter's path; the test is skipped without one.
func python3(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the Python SDK's tests need it")
	}
	return py
}

// wfrun builds the server once per test binary run into a temporary
// directory and returns its path.
func wfrun(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wfrun")
	proctest.Run(t, root, nil, "go", "build", "-o", bin, "./cmd/wfrun")
	return bin
}

// TestPythonSDK runs both suites (the agent server's and the client's)
// against a wfrun built from this checkout.
func TestPythonSDK(t *testing.T) {
	py := python3(t)
	bin := wfrun(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "discover", "-s", "tests", "-v")
	cmd.Env = append(os.Environ(), "BATON_WFRUN="+bin, "PYTHONPATH=src", "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	// A suite that could not start would be an error, not a skip; a
	// skipped Python test would pass unnoticed.
	if !strings.Contains(string(out), "\nOK") || strings.Contains(string(out), "skipped") {
		t.Fatalf("python3 -m unittest did not pass every test:\n%s", out)
	}
	t.Logf("python3 -m unittest:\n%s", out)
}

// TestPipInstall installs the package as the README says, with no package
// index (its build backend is in the source tree and needs nothing), into a
// fresh virtual environment, and imports it from there, typing marker
// included.
func TestPipInstall(t *testing.T) {
	py := python3(t)
	venv := filepath.Join(t.TempDir(), "venv")
	proctest.Run(t, ".", nil, py, "-m", "venv", venv)
	vpy := filepath.Join(venv, "bin", "python")
	build := t.TempDir()
	// pip builds in a copy of the source tree; the checkout stays clean.
	proctest.Run(t, ".", []string{"PIP_NO_INPUT=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "TMPDIR=" + build},
		vpy, "-m", "pip", "install", "--no-index", "--quiet", ".")
	cmd := exec.Command(vpy, "-c", `import baton, pathlib, sys
p = pathlib.Path(baton.__file__).parent
assert str(p).startswith(sys.prefix), p
assert (p / "py.typed").exists()
print(baton.__version__, baton.Client().server)`)
	cmd.Dir = t.TempDir() // not the source tree: the installed package must be the one imported
	cmd.Env = append(os.Environ(), "BATON_SERVER=http://127.0.0.1:9")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("import the installed package: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "0.1.0 http://127.0.0.1:9"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
