package natsserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/natsver"
	"github.com/batonhq/baton/natsserver"
)

func start(t *testing.T, cfg natsserver.Config) *natsserver.Server {
	t.Helper()
	s, err := natsserver.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// roundTrip creates a stream, publishes one message and reads it back.
func roundTrip(t *testing.T, nc *nats.Conn, data string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	_, err = js.Publish(ctx, "t.1", []byte(data))
	require.NoError(t, err)
	msg, err := st.GetLastMsgForSubject(ctx, "t.1")
	require.NoError(t, err)
	require.Equal(t, data, string(msg.Data))
}

func TestStart_InProcess(t *testing.T) {
	s := start(t, natsserver.Config{Dir: t.TempDir()})
	require.Empty(t, s.URL(), "an in-process server has no address")
	nc, err := s.Connect()
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, natsver.CheckConn(nc), "the embedded server is recent enough")
	roundTrip(t, nc, "hello")
	require.Equal(t, 1, s.Clients())
}

func TestStart_ListenOnLoopback(t *testing.T) {
	s := start(t, natsserver.Config{Dir: t.TempDir(), Listen: true})
	require.True(t, strings.HasPrefix(s.URL(), "nats://127.0.0.1:"), "got URL %q, want a loopback address", s.URL())
	require.NotEqual(t, "nats://127.0.0.1:4222", s.URL(), "a random port, not the default one")
	nc, err := nats.Connect(s.URL())
	require.NoError(t, err)
	defer nc.Close()
	roundTrip(t, nc, "over tcp")
}

func TestStart_DataSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := natsserver.Start(natsserver.Config{Dir: dir})
	require.NoError(t, err)
	nc, err := s.Connect()
	require.NoError(t, err)
	roundTrip(t, nc, "kept")
	nc.Close()
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is safe twice")

	s = start(t, natsserver.Config{Dir: dir})
	nc, err = s.Connect()
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := context.Background()
	st, err := js.Stream(ctx, "T")
	require.NoError(t, err)
	msg, err := st.GetLastMsgForSubject(ctx, "t.1")
	require.NoError(t, err)
	require.Equal(t, "kept", string(msg.Data))
}

func TestStart_MaxPayload(t *testing.T) {
	s := start(t, natsserver.Config{Dir: t.TempDir()})
	nc, err := s.Connect()
	require.NoError(t, err)
	defer nc.Close()
	require.Equal(t, int64(natsserver.DefaultMaxPayload), nc.MaxPayload())
}

func TestStart_ConfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		cfg   natsserver.Config
		field string
	}{
		{"no dir", natsserver.Config{}, "Dir"},
		{"bad port", natsserver.Config{Dir: "x", Port: 70000}, "Port"},
		{"negative sync", natsserver.Config{Dir: "x", SyncInterval: -time.Second}, "SyncInterval"},
		{"huge payload", natsserver.Config{Dir: "x", MaxPayload: 65 << 20}, "MaxPayload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := natsserver.Start(tt.cfg)
			var ce *natsserver.ConfigError
			require.True(t, errors.As(err, &ce), "got %v, want a *ConfigError", err)
			require.Equal(t, tt.field, ce.Field)
		})
	}
}
