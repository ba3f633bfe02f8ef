// Package python_test runs the Python SDK's unittest suites from go test:
// it builds wfrun, and the suites start it (`wfrun serve` on free loopback
// ports, with temporary data and workflows) and drive it with the SDK's
// agent server and client. Where python3 is installed a failing Python test
// fails the Go test; only a machine without python3 skips it.
package python_test

import (
	"context"
	"net"
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

// wfrun builds the server from this checkout into a temporary directory
// and returns its path (go's build cache makes the second build quick).
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

// TestQuickstart_SorterInPython runs docs/server-quickstart/agent.py, the
// sorter of docs/server.md and of the README, on the SDK against wfrun serve
// hosting the quickstart's workflow (its port moved to a free one): a
// ticket is sorted and handed on, its topic in the context.
func TestQuickstart_SorterInPython(t *testing.T) {
	py := python3(t)
	bin := wfrun(t)
	addrs := proctest.FreeAddrs(t, 3) // the sorter, the HTTP API, NATS
	sorterAddr := addrs[0]
	_, port, _ := strings.Cut(sorterAddr, ":")
	dir := t.TempDir()
	flows := filepath.Join(dir, "workflows")
	must(t, os.Mkdir(flows, 0o700))
	copyReplaced(t, filepath.Join(root, "docs/server-quickstart/triage.yaml"), filepath.Join(flows, "triage.yaml"), "127.0.0.1:9000", sorterAddr)
	copyReplaced(t, filepath.Join(root, "docs/server-quickstart/agent.py"), filepath.Join(dir, "agent.py"), "port=9000", "port="+port)
	sdk, err := filepath.Abs("src")
	must(t, err)
	httpAddr := addrs[1]
	env := []string{"SORTER_SECRET=s3cret", "PYTHONPATH=" + sdk, "PYTHONDONTWRITEBYTECODE=1", "BATON_SERVER=http://" + httpAddr}
	proctest.Start(t, env, "wfrun: serving the HTTP API", bin, "serve", "--workflows", flows, "--data", filepath.Join(dir, "data"), "--http", httpAddr, "--nats-listen", addrs[2])
	// The agent logs nothing: it is ready once its port answers.
	agent := exec.Command(py, filepath.Join(dir, "agent.py"))
	agent.Env = append(os.Environ(), env...)
	must(t, agent.Start())
	t.Cleanup(func() {
		_ = agent.Process.Signal(os.Interrupt)
		_ = agent.Wait()
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.Dial("tcp", sorterAddr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sorter does not listen on %s: %v", sorterAddr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if out, code := proctest.Output(t, env, bin, "start", "triage", "--id", "ticket-1", "--input", `{"text": "I was charged twice"}`); code != 0 {
		t.Fatalf("start: exit %d\n%s", code, out)
	}
	for {
		got := proctest.GetInstance(t, env, bin, "ticket-1")
		if got.State == "ANSWERING" {
			if got.Context["topic"] != "billing" {
				t.Fatalf("ticket-1: %+v, want topic billing in the context", got)
			}
			return
		}
		if got.Status != "running" || time.Now().After(deadline) {
			t.Fatalf("ticket-1: %+v, want it in ANSWERING (the sorter sorted it as not urgent)", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// copyReplaced copies the file from to to with old replaced by new, which
// must occur in it.
func copyReplaced(t *testing.T, from, to, old, new string) {
	t.Helper()
	src, err := os.ReadFile(from)
	must(t, err)
	if !strings.Contains(string(src), old) {
		t.Fatalf("%s does not contain %q", from, old)
	}
	must(t, os.WriteFile(to, []byte(strings.Replace(string(src), old, new, 1)), 0o600))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
