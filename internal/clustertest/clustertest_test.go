package clustertest

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if code, ok := RunChild(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// A server whose client port another process holds exits, its log saying
// why, rather than run without a listener (with logging off, nats-server
// logs nothing and carries on): StartWith sees the exit and sets the
// cluster up again on other ports.
func TestServer_ExitsWhenItCannotListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	cmd := Child(t, childEnv+"=n0", dirEnv+"="+dir, portEnv+"="+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port),
		routePortEnv+"="+strconv.Itoa(FreePort(t)), routesEnv+"=", sinkEnv+"=127.0.0.1:1", syncEnv+"=0")
	WaitFor(t, "the server to exit", time.Minute, func() bool { return exited(cmd) })
	_ = cmd.Wait()
	if cmd.ProcessState.ExitCode() == 0 {
		t.Errorf("got exit code 0, want the server to fail")
	}
	data, err := os.ReadFile(filepath.Join(dir, logName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "Error listening on port") {
		t.Errorf("got log %q, want it to say the port could not be listened on", data)
	}
}
