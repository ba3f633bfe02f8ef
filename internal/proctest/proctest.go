// Package proctest runs programs for tests: commands run to their end,
// and long-running servers and agents started until the test ends.
package proctest

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// FreeAddr is a loopback address (127.0.0.1:port) free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return FreeAddrs(t, 1)[0]
}

// FreeAddrs is n loopback addresses free a moment ago, each another port:
// all n are held while they are chosen, since a port closed can be the
// next one the system hands out (two FreeAddr calls in a row have
// returned the same port, and the second process failed to listen).
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

// Run runs a command in dir to its end, env added to the test's
// environment; its failure fails the test with its output.
func Run(t testing.TB, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// Output runs a command and returns its stdout and exit code; a failed
// command's output has its stderr after its stdout.
func Output(t testing.TB, env []string, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out) + stderr.String(), ee.ExitCode()
		}
		t.Fatalf("%s: %v", name, err)
	}
	return string(out), 0
}

// Start starts a long-running program and waits (at most a minute) until
// a line of its output starts with ready. When the test ends it is
// interrupted, and killed if it has not exited 20 seconds later; a failed
// test logs its output. It returns the running command, for a test that
// kills it itself (with cmd.Process.Kill; Start waits for it).
func Start(t testing.TB, env []string, ready, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var (
		mu   sync.Mutex
		logs strings.Builder
	)
	seen := make(chan struct{})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		once := sync.OnceFunc(func() { close(seen) })
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.HasPrefix(sc.Text(), ready) {
				once()
			}
		}
	}()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		<-drained
		pr.Close()
		if t.Failed() {
			mu.Lock()
			t.Logf("%s:\n%s", filepath.Base(name), logs.String())
			mu.Unlock()
		}
	})
	select {
	case <-seen:
	case <-exited:
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%s exited before it was ready:\n%s", name, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s was not ready within a minute", name)
	}
	return cmd
}

// Instance is an instance as `wfrun get ID -o json` (and `wfrun start
// --wait -o json`) prints it.
type Instance struct {
	ID      string         `json:"id"`
	Status  string         `json:"status"`
	State   string         `json:"state"`
	Step    int            `json:"step"`
	Outcome string         `json:"outcome"`
	Context map[string]any `json:"context"`
}

// GetInstance runs `wfrun get ID -o json` with the wfrun binary, env added
// to the test's environment; a failure fails the test.
func GetInstance(t testing.TB, env []string, wfrun, id string) Instance {
	t.Helper()
	out, code := Output(t, env, wfrun, "get", id, "-o", "json")
	if code != 0 {
		t.Fatalf("wfrun get %s: exit %d\n%s", id, code, out)
	}
	var in Instance
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("wfrun get %s: %v\n%s", id, err, out)
	}
	return in
}
