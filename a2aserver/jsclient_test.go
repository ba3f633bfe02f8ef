package a2aserver_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/jspeers"
)

// jsClient runs a scenario of the A2A client built on the official
// JavaScript SDK against the fixture's server; onLine sees each line it
// prints as it prints it. It fails the test when the scenario fails.
func jsClient(t *testing.T, f *fixture, dialect, token, scenario string, onLine func(string)) {
	t.Helper()
	node := jspeers.Node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, jspeers.Script("a2a_client_run.mjs"), scenario)
	cmd.Env = append(os.Environ(), "BASE="+f.http.URL, "DIALECT="+dialect, "TOKEN="+token)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if onLine != nil {
			onLine(sc.Text())
		}
	}
	err = cmd.Wait()
	require.NoError(t, err, "scenario %s (%s): %s\n%s", scenario, dialect, strings.Join(lines, "\n"), stderr.String())
	require.Contains(t, lines, "ok "+scenario)
}

func TestJSClient(t *testing.T) {
	for _, dialect := range []string{"1.0", "0.3"} {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, "")
			for _, scenario := range []string{"card", "complete", "idempotent", "wait", "stream", "cancel", "errors"} {
				t.Run(scenario, func(t *testing.T) { jsClient(t, f, dialect, "", scenario, nil) })
			}
			t.Run("gated", func(t *testing.T) {
				// The gate opens once the client's stream shows the task
				// working: the stream then goes on to input-required.
				var once sync.Once
				jsClient(t, f, dialect, "", "gated", func(line string) {
					if strings.HasPrefix(line, "working ") {
						once.Do(func() { close(f.gate) })
					}
				})
			})
		})
	}
}

func TestJSClient_Token(t *testing.T) {
	f := newFixture(t, "s3cret-token")
	jsClient(t, f, "1.0", "s3cret-token", "token", nil)
}
