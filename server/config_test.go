package server_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/server"
)

func TestConfig_Validate(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	tests := []struct {
		name string
		cfg  server.Config
		want error
	}{
		{"defaults", server.Config{WorkflowsDir: "x"}, nil},
		{"no workflows", server.Config{}, &server.ConfigError{}},
		{"bad address", server.Config{WorkflowsDir: "x", HTTPAddr: "nope"}, &server.ConfigError{}},
		{"every interface without tokens", server.Config{WorkflowsDir: "x", HTTPAddr: ":8080"}, server.ErrNotLoopback},
		{"public address without tokens", server.Config{WorkflowsDir: "x", HTTPAddr: "10.1.2.3:8080"}, server.ErrNotLoopback},
		{"a host name without tokens", server.Config{WorkflowsDir: "x", HTTPAddr: "example.com:8080"}, server.ErrNotLoopback},
		{"public address with tokens", server.Config{WorkflowsDir: "x", HTTPAddr: "0.0.0.0:8080", TokenFile: tokens}, nil},
		{"localhost", server.Config{WorkflowsDir: "x", HTTPAddr: "localhost:0"}, nil},
		{"IPv6 loopback", server.Config{WorkflowsDir: "x", HTTPAddr: "[::1]:0"}, nil},
		{"without NATS", server.Config{WorkflowsDir: "x", NATS: server.NoNATS}, nil},
		{"a NATS URL", server.Config{WorkflowsDir: "x", NATS: "nats://10.0.0.1:4222,nats://10.0.0.2:4222"}, nil},
		{"a NATS address that is no URL", server.Config{WorkflowsDir: "x", NATS: "10.0.0.1:4222"}, &server.ConfigError{}},
		{"a listen address with a NATS URL", server.Config{WorkflowsDir: "x", NATS: "nats://10.0.0.1:4222", NATSListen: "127.0.0.1:4222"}, &server.ConfigError{}},
		{"embedded NATS off loopback", server.Config{WorkflowsDir: "x", NATSListen: "0.0.0.0:4222"}, server.ErrNATSNotLoopback},
		{"embedded NATS on a bad address", server.Config{WorkflowsDir: "x", NATSListen: "4222"}, &server.ConfigError{}},
		{"3 replicas on a cluster", server.Config{WorkflowsDir: "x", NATS: "nats://10.0.0.1:4222", Replicas: 3}, nil},
		{"3 replicas on the embedded server", server.Config{WorkflowsDir: "x", Replicas: 3}, &server.ConfigError{}},
		{"3 replicas without NATS", server.Config{WorkflowsDir: "x", NATS: server.NoNATS, Replicas: 3}, &server.ConfigError{}},
		{"6 replicas", server.Config{WorkflowsDir: "x", NATS: "nats://10.0.0.1:4222", Replicas: 6}, &server.ConfigError{}},
		{"a name on a cluster", server.Config{WorkflowsDir: "x", NATS: "nats://10.0.0.1:4222", Name: "api-1", LeaseTTL: 5 * time.Second}, nil},
		{"a name without a cluster", server.Config{WorkflowsDir: "x", Name: "api-1"}, &server.ConfigError{}},
		{"a lease time without a cluster", server.Config{WorkflowsDir: "x", NATS: server.NoNATS, LeaseTTL: time.Second}, &server.ConfigError{}},
		{"a name with a dot", server.Config{WorkflowsDir: "x", NATS: "nats://10.0.0.1:4222", Name: "api.1"}, &server.ConfigError{}},
		{"a name too long", server.Config{WorkflowsDir: "x", NATS: "nats://10.0.0.1:4222", Name: strings.Repeat("a", 65)}, &server.ConfigError{}},
		{"a nil Go handler", server.Config{WorkflowsDir: "x", Handlers: map[string]registry.Handler{"a": nil}}, &server.ConfigError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			var ce *server.ConfigError
			switch {
			case tt.want == nil:
				assert.NoError(t, err)
			case errors.As(tt.want, &ce):
				assert.ErrorAs(t, err, &ce)
			default:
				assert.ErrorIs(t, err, tt.want)
			}
		})
	}
}

func TestNew_Refuses(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(empty, []byte("\n  \n"), 0o600))
	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, "a.yaml"), []byte("workflow: a\ninitial: X\nstates:\n  X: {agnt: w}\n"), 0o600))
	secret := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(secret, "s.yaml"), []byte(`workflow: s
initial: X
agents:
  w: {url: "http://127.0.0.1:1/w", secret_env: BATON_TEST_UNSET_SECRET}
states:
  X: {agent: w}
  D: {terminal: true}
rules:
  - {id: r, from: w, trigger: t, next: D}
`), 0o600))
	orphan := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(orphan, "orphan.yaml"), []byte(`workflow: orphan
initial: CALL
states:
  CALL:
    workflow: nowhere
  D: {terminal: true}
rules:
  - {id: r, from: CALL, trigger: error, next: D}
`), 0o600))
	tests := []struct {
		name string
		cfg  server.Config
		has  string
	}{
		{"empty token file", server.Config{WorkflowsDir: bad, TokenFile: empty}, "no token"},
		{"missing token file", server.Config{WorkflowsDir: bad, TokenFile: filepath.Join(bad, "none")}, "token-file"},
		{"invalid workflow", server.Config{WorkflowsDir: bad}, "a.yaml:4:"},
		{"no workflow file", server.Config{WorkflowsDir: t.TempDir()}, "no workflow file"},
		{"unset secret", server.Config{WorkflowsDir: secret}, "secret_env BATON_TEST_UNSET_SECRET is not set"},
		{"a workflow calling one not hosted", server.Config{WorkflowsDir: orphan}, `orphan.yaml:5:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.DataDir, tt.cfg.NATSListen = t.TempDir(), anyPort
			s, err := server.New(context.Background(), tt.cfg)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), tt.has)
		})
	}
}

func TestRun_ServesUntilContextEnds(t *testing.T) {
	ag := newAgents(t)
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Config{
			WorkflowsDir: workflowsDir(t, ag.srv.URL, map[string]string{"echo.yaml": echoFlow}),
			DataDir:      t.TempDir(), HTTPAddr: "127.0.0.1:0", NATSListen: anyPort,
			OnListen: func(a net.Addr) { addr <- a },
		})
	}()
	var a net.Addr
	select {
	case a = <-addr:
	case err := <-done:
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + a.String() + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	// An open event stream does not hold the shutdown up.
	stream, err := http.Get("http://" + a.String() + "/v1/events")
	require.NoError(t, err)
	defer stream.Body.Close()
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
