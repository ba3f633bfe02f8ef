package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/server"
)

// runServer runs server.Run without NATS on a free loopback port, as
// configured by opts, until the test ends; it returns the API's URL.
func runServer(t *testing.T, opts ...option) string {
	t.Helper()
	ag := newAgents(t)
	cfg := server.Config{
		WorkflowsDir: workflowsDir(t, ag.srv.URL, map[string]string{"echo.yaml": echoFlow}),
		DataDir:      t.TempDir(), NATS: server.NoNATS, HTTPAddr: "127.0.0.1:0",
	}
	for _, o := range opts {
		o(&cfg)
	}
	addr := make(chan net.Addr, 1)
	cfg.OnListen = func(a net.Addr) { addr <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	select {
	case a := <-addr:
		return "http://" + a.String()
	case err := <-done:
		t.Fatal(err)
		return ""
	}
}

// closedByServer sends a request's headers and the start of its body, then
// (when trickle is set) a byte every few milliseconds, and reports whether
// the server closed the connection before the test's own bound.
func closedByServer(t *testing.T, base string, trickle bool) bool {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /v1/workflows/echo/instances HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		for k := 0; trickle && k < 2000; k++ { // at most 10s of it
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	defer func() { close(stop); <-trickled }()
	// The bound is far beyond the server's read timeout: only a server that
	// never lets go reaches it.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, err = io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return true // EOF, or a reset after the server's answer
}

func TestRun_SlowBodyIsDisconnectedAfterTheReadTimeout(t *testing.T) {
	base := runServer(t, func(c *server.Config) { c.ReadTimeout = 50 * time.Millisecond })
	t.Run("Halted", func(t *testing.T) {
		assert.True(t, closedByServer(t, base, false), "a body that stops halfway still holds its connection")
	})
	t.Run("Trickled", func(t *testing.T) {
		assert.True(t, closedByServer(t, base, true), "a body sent a byte at a time still holds its connection")
	})
}

// openStream opens an event stream and reads its first line: the stream is
// open on the server once it returns.
func openStream(t *testing.T, url string) (*http.Response, *bufio.Reader) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, 200, resp.StatusCode)
	rd := bufio.NewReader(resp.Body)
	_, err = rd.ReadString('\n')
	require.NoError(t, err)
	return resp, rd
}

func TestRun_EventStreamOutlivesTheReadAndWriteTimeouts(t *testing.T) {
	// Handlers get three seconds: the start below, with its commit synced
	// to disk, has to fit under both timeouts on a busy machine.
	base := runServer(t, func(c *server.Config) {
		c.ReadTimeout, c.WriteTimeout = 3*time.Second, 3*time.Second
	})
	_, api := openStream(t, base+"/v1/events")
	_, view := openStream(t, base+"/ui/events")
	// The slow request began after the streams were answered, and the
	// server closes it a read timeout after its beginning: once it is
	// closed, both deadlines of the streams' connections have passed.
	require.True(t, closedByServer(t, base, false))
	code, _ := doURL(t, "POST", base+"/v1/workflows/echo/instances", `{"id": "late"}`)
	require.Equal(t, 201, code)
	for {
		line, err := api.ReadString('\n')
		require.NoError(t, err, "the API's stream ended")
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var ev server.Event
			require.NoError(t, json.Unmarshal([]byte(data), &ev))
			assert.Equal(t, "late", ev.Instance)
			break
		}
	}
	for {
		line, err := view.ReadString('\n')
		require.NoError(t, err, "the web view's stream ended")
		if strings.HasPrefix(line, "event: changed") {
			break
		}
	}
}

func TestRun_EventStreamsAreCapped(t *testing.T) {
	base := runServer(t, func(c *server.Config) { c.MaxStreams = 2 })
	first, _ := openStream(t, base+"/v1/events")
	openStream(t, base+"/ui/events")

	code, body := doURL(t, "GET", base+"/v1/events", "")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "too_many_streams", body["error"].(map[string]any)["code"])
	resp, err := http.Get(base + "/ui/events?instance=x")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the web view's streams count too")
	resp, err = http.Get(base + "/v1/events")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))

	// A closed stream frees its slot, once the server has seen it go.
	first.Body.Close()
	for k := 0; ; k++ {
		resp, err := http.Get(base + "/v1/events")
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		require.Less(t, k, 2000, "the closed stream's slot was never freed")
		time.Sleep(5 * time.Millisecond)
	}
}

func TestConfig_RefusesNegativeLimits(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/echo.yaml", []byte(echoFlow), 0o600))
	for field, o := range map[string]option{
		"read-timeout":  func(c *server.Config) { c.ReadTimeout = -1 },
		"write-timeout": func(c *server.Config) { c.WriteTimeout = -1 },
		"idle-timeout":  func(c *server.Config) { c.IdleTimeout = -1 },
		"max-streams":   func(c *server.Config) { c.MaxStreams = -1 },
	} {
		cfg := server.Config{WorkflowsDir: dir}
		o(&cfg)
		var ce *server.ConfigError
		require.ErrorAs(t, cfg.Validate(), &ce, field)
		assert.Equal(t, field, ce.Field)
	}
}
