package natsstore_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/natsver"
	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

func TestConfig_Validate(t *testing.T) {
	tests := []struct {
		name  string
		cfg   natsstore.Config
		field string
	}{
		{"prefix with a dot", natsstore.Config{Prefix: "a.b"}, "Prefix"},
		{"prefix with a wildcard", natsstore.Config{Prefix: "a*"}, "Prefix"},
		{"replicas", natsstore.Config{Replicas: 7}, "Replicas"},
		{"shards", natsstore.Config{Shards: 1000}, "Shards"},
		{"timeout", natsstore.Config{Timeout: -time.Second}, "Timeout"},
		{"attempts", natsstore.Config{Attempts: -1}, "Attempts"},
		{"duplicates", natsstore.Config{DuplicateWindow: -time.Second}, "DuplicateWindow"},
		{"dead letter limit", natsstore.Config{DeadLetterLimit: -1}, "DeadLetterLimit"},
	}
	srv := startServer(t, natsserver.Config{})
	nc := connect(t, srv)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := natsstore.Open(context.Background(), nc, tt.cfg)
			var ce *natsstore.ConfigError
			require.True(t, errors.As(err, &ce), "got %v, want a *ConfigError", err)
			require.Equal(t, tt.field, ce.Field)
		})
	}
}

// TestOpen_Layout checks what another process finds on the server: the
// streams, bucket and subjects the documentation describes, on disk, with
// the replicas asked for.
func TestOpen_Layout(t *testing.T) {
	srv := startServer(t, natsserver.Config{})
	s := openStore(t, srv, natsstore.Config{Prefix: "baton", DeadLetterLimit: 500})
	ctx := context.Background()
	require.NoError(t, s.Commit(ctx, step("order/1", "a", 1)))
	require.NoError(t, s.AddDeadLetter(ctx, record.DeadLetter{MessageID: "m", At: t0}))
	require.NoError(t, s.SaveWorkflow(ctx, record.WorkflowSource{Hash: "sha256:ab", Name: "w", Source: []byte("x")}))

	js := raw(t, srv)
	require.Equal(t, 8, s.Shards())
	subject := s.Subject("order/1")
	tok := base64.RawURLEncoding.EncodeToString([]byte("order/1"))
	var shard int
	_, err := fmt.Sscanf(subject, "baton.step.%d."+tok, &shard)
	require.NoError(t, err, "subject %q", subject)
	for k := range 8 {
		steps, err := js.Stream(ctx, fmt.Sprintf("baton_steps_%d", k))
		require.NoError(t, err)
		info := steps.CachedInfo()
		require.Equal(t, []string{fmt.Sprintf("baton.step.%d.>", k)}, info.Config.Subjects)
		require.Equal(t, jetstream.FileStorage, info.Config.Storage)
		require.Equal(t, 1, info.Config.Replicas)
		require.Equal(t, "8", info.Config.Metadata["baton.shards"])
		if k != shard {
			require.Zero(t, info.State.Msgs, "shard %d holds no step of order/1", k)
			continue
		}
		m, err := steps.GetLastMsgForSubject(ctx, subject)
		require.NoError(t, err)
		require.Contains(t, string(m.Data), `"format":1`)
	}

	dead, err := js.Stream(ctx, "baton_dead")
	require.NoError(t, err)
	require.Equal(t, []string{"baton.dead"}, dead.CachedInfo().Config.Subjects)
	require.Equal(t, int64(500), dead.CachedInfo().Config.MaxMsgs)
	require.Equal(t, uint64(1), dead.CachedInfo().State.Msgs)

	kv, err := js.KeyValue(ctx, "baton_workflows")
	require.NoError(t, err)
	_, err = kv.Get(ctx, base64.RawURLEncoding.EncodeToString([]byte("sha256:ab")))
	require.NoError(t, err)

	// Opening again (another engine, a restart) keeps what is there.
	again := openStore(t, srv, natsstore.Config{Prefix: "baton"})
	require.Equal(t, 1, look(t, again, "order/1").snap.Step)
}

// TestOpen_ShardsFixedByFirstOpen: every store of a prefix hashes ids to
// the same streams, whatever it configures.
func TestOpen_ShardsFixedByFirstOpen(t *testing.T) {
	srv := startServer(t, natsserver.Config{})
	ctx := context.Background()
	first := openStore(t, srv, natsstore.Config{Prefix: "p", Shards: 3})
	require.Equal(t, 3, first.Shards())
	ids := []string{"a", "b", "c", "d", "e", "f", "g"}
	for _, id := range ids {
		require.NoError(t, first.Commit(ctx, step(id, "a", 1)))
	}
	for _, shards := range []int{0, 1, 5} {
		later := openStore(t, srv, natsstore.Config{Prefix: "p", Shards: shards})
		require.Equal(t, 3, later.Shards())
		all, err := later.Instances(ctx)
		require.NoError(t, err)
		require.Len(t, all, len(ids))
		for _, id := range ids {
			require.Equal(t, first.Subject(id), later.Subject(id))
			require.Equal(t, 1, look(t, later, id).snap.Step)
		}
	}
}

func TestStore_Close(t *testing.T) {
	srv := startServer(t, natsserver.Config{})
	nc := connect(t, srv)
	ctx := context.Background()
	s, err := natsstore.Open(ctx, nc, natsstore.Config{Timeout: testTimeout})
	require.NoError(t, err)
	require.NoError(t, s.Commit(ctx, step("i", "a", 1)))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is safe twice")
	require.ErrorIs(t, s.Commit(ctx, step("i", "a", 2)), natsstore.ErrClosed)
	_, err = s.Instance(ctx, "i")
	require.ErrorIs(t, err, natsstore.ErrClosed)
	_, err = s.Instances(ctx)
	require.ErrorIs(t, err, natsstore.ErrClosed)
	_, err = s.Prune(ctx, time.Now())
	require.ErrorIs(t, err, natsstore.ErrClosed)
	require.True(t, nc.IsConnected(), "the store does not own the connection")
}

func TestOpen_ClosedConnection(t *testing.T) {
	srv := startServer(t, natsserver.Config{})
	nc := connect(t, srv)
	nc.Close()
	_, err := natsstore.Open(context.Background(), nc, natsstore.Config{})
	require.ErrorIs(t, err, natsver.ErrNotConnected)
	require.NotErrorIs(t, err, natsstore.ErrServerTooOld)
}

func TestStore_InvalidID(t *testing.T) {
	srv := startServer(t, natsserver.Config{})
	s := openStore(t, srv, natsstore.Config{})
	st := step("", "a", 1)
	require.ErrorIs(t, s.Commit(context.Background(), st), natsstore.ErrInvalidID)
}

// TestStore_DeadLetterLimit: past the limit the oldest dead letters go, and
// the numbering goes on.
func TestStore_DeadLetterLimit(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	s := openStore(t, srv, natsstore.Config{DeadLetterLimit: 3})
	ctx := context.Background()
	for n := 1; n <= 5; n++ {
		require.NoError(t, s.AddDeadLetter(ctx, record.DeadLetter{MessageID: fmt.Sprintf("m%d", n), At: t0}))
	}
	got, err := s.DeadLetters(ctx)
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i, d := range got {
		require.Equal(t, i+3, d.Seq)
		require.Equal(t, fmt.Sprintf("m%d", i+3), d.MessageID)
	}
}

// TestOpen_ReplicasNeedACluster: a single server cannot keep three copies;
// Open says so instead of running with fewer.
func TestOpen_ReplicasNeedACluster(t *testing.T) {
	srv := startServer(t, natsserver.Config{})
	_, err := natsstore.Open(context.Background(), connect(t, srv), natsstore.Config{Replicas: 3, Timeout: testTimeout})
	var re *natsstore.RequestError
	require.True(t, errors.As(err, &re), "got %v, want a *RequestError", err)
	require.Contains(t, re.Op, "open stream")
}
