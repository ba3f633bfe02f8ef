package natsstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

// openReadOnly opens the store of cfg's prefix read-only over a connection
// of its own, and closes both when the test ends.
func openReadOnly(t *testing.T, srv *natsserver.Server, cfg natsstore.Config) *natsstore.Store {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = testTimeout
	}
	s, err := natsstore.OpenReadOnly(context.Background(), connect(t, srv), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// streamNames lists the streams on the server, sorted.
func streamNames(t *testing.T, js jetstream.JetStream) []string {
	t.Helper()
	l := js.StreamNames(context.Background())
	var out []string
	for name := range l.Name() {
		out = append(out, name)
	}
	require.NoError(t, l.Err())
	slices.Sort(out)
	return out
}

// writeSome commits three steps of each of four instances, two dead
// letters and a workflow source.
func writeSome(t *testing.T, s *natsstore.Store) []string {
	t.Helper()
	ctx := context.Background()
	ids := []string{"order/1", "order/2", "x", "y y"}
	for _, id := range ids {
		for n := 1; n <= 3; n++ {
			require.NoError(t, s.Commit(ctx, step(id, "a", n)))
		}
	}
	for _, m := range []string{"m1", "m2"} {
		require.NoError(t, s.AddDeadLetter(ctx, record.DeadLetter{MessageID: m, Reason: "expired", Instance: "x", At: t0}))
	}
	require.NoError(t, s.SaveWorkflow(ctx, record.WorkflowSource{Hash: "sha256:ab", Name: "w", Version: 1, Source: []byte("name: w")}))
	return ids
}

func TestOpenReadOnly_ReadsWhatOpenWrote(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	w := openStore(t, srv, natsstore.Config{Prefix: "ro", Shards: 3})
	ids := writeSome(t, w)
	ctx := context.Background()

	r := openReadOnly(t, srv, natsstore.Config{Prefix: "ro"})
	require.True(t, r.ReadOnly())
	require.False(t, w.ReadOnly())
	require.Equal(t, 3, r.Shards(), "the prefix's shards, not the default")

	want, err := w.Instances(ctx)
	require.NoError(t, err)
	got, err := r.Instances(ctx)
	require.NoError(t, err)
	require.Len(t, got, len(ids))
	require.Equal(t, want, got)
	for _, id := range ids {
		wv, rv := look(t, w, id), look(t, r, id)
		require.Equal(t, wv, rv, "instance %s", id)
		require.Equal(t, 3, rv.snap.Step)
		require.Len(t, rv.history, 3)
	}
	wantDead, err := w.DeadLetters(ctx)
	require.NoError(t, err)
	gotDead, err := r.DeadLetters(ctx)
	require.NoError(t, err)
	require.Len(t, gotDead, 2)
	require.Equal(t, wantDead, gotDead)
	src, err := r.Workflow(ctx, "sha256:ab")
	require.NoError(t, err)
	require.Equal(t, "name: w", string(src.Source))

	_, err = r.Instance(ctx, "nope")
	require.ErrorIs(t, err, record.ErrUnknownInstance)

	// What the writer commits later, a read-only store opened before sees.
	require.NoError(t, w.Commit(ctx, step("x", "a", 4)))
	require.Equal(t, 4, look(t, r, "x").snap.Step)
}

func TestOpenReadOnly_NoStore(t *testing.T) {
	srv := startServer(t, natsserver.Config{})
	js := raw(t, srv)
	ctx := context.Background()

	_, err := natsstore.OpenReadOnly(ctx, connect(t, srv), natsstore.Config{Prefix: "nothing", Timeout: testTimeout})
	require.ErrorIs(t, err, natsstore.ErrNoStore)
	var ne *natsstore.NoStoreError
	require.True(t, errors.As(err, &ne), "got %T, want a *NoStoreError", err)
	require.Equal(t, "nothing", ne.Prefix)
	require.Contains(t, err.Error(), `prefix "nothing"`)
	require.Empty(t, streamNames(t, js), "a read-only open creates no stream")

	// The default prefix, on a server holding another prefix only.
	openStore(t, srv, natsstore.Config{Prefix: "other", Shards: 2})
	before := streamNames(t, js)
	_, err = natsstore.OpenReadOnly(ctx, connect(t, srv), natsstore.Config{Timeout: testTimeout})
	require.ErrorIs(t, err, natsstore.ErrNoStore)
	require.Contains(t, err.Error(), `prefix "`+natsstore.DefaultPrefix+`"`)
	require.Equal(t, before, streamNames(t, js))
}

// TestOpenReadOnly_PartOfTheStoreMissing: a prefix whose streams or bucket
// were deleted is no store either, and nothing is created in their place.
func TestOpenReadOnly_PartOfTheStoreMissing(t *testing.T) {
	srv := startServer(t, natsserver.Config{})
	js := raw(t, srv)
	ctx := context.Background()
	for _, tt := range []struct{ kind, suffix string }{
		{"stream", "_steps_1"},
		{"stream", "_dead"},
		{"bucket", "_workflows"},
	} {
		t.Run(tt.kind+tt.suffix, func(t *testing.T) {
			prefix := fmt.Sprintf("p%d", prefixes.Add(1))
			openStore(t, srv, natsstore.Config{Prefix: prefix, Shards: 2})
			name := prefix + tt.suffix
			if tt.kind == "bucket" {
				require.NoError(t, js.DeleteKeyValue(ctx, name))
			} else {
				require.NoError(t, js.DeleteStream(ctx, name))
			}
			before := streamNames(t, js)
			_, err := natsstore.OpenReadOnly(ctx, connect(t, srv), natsstore.Config{Prefix: prefix, Timeout: testTimeout})
			var ne *natsstore.NoStoreError
			require.True(t, errors.As(err, &ne), "got %v, want a *NoStoreError", err)
			require.Equal(t, prefix, ne.Prefix)
			require.Equal(t, tt.kind+" "+name, ne.Missing)
			require.Equal(t, before, streamNames(t, js))
		})
	}
}

func TestOpenReadOnly_WritesRefused(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	w := openStore(t, srv, natsstore.Config{Prefix: "ro", Shards: 2})
	writeSome(t, w)
	js := raw(t, srv)
	ctx := context.Background()

	// state is what the server holds of the prefix: each stream's messages
	// and last sequence.
	state := func() map[string][2]uint64 {
		out := map[string][2]uint64{}
		for _, name := range streamNames(t, js) {
			st, err := js.Stream(ctx, name)
			require.NoError(t, err)
			s := st.CachedInfo().State
			out[name] = [2]uint64{s.Msgs, s.LastSeq}
		}
		return out
	}
	before := state()
	require.Len(t, before, 5, "two steps streams, the dead letters, the listing index, the bucket's")

	nc := connect(t, srv)
	r, err := natsstore.OpenReadOnly(ctx, nc, natsstore.Config{Prefix: "ro", Partitions: 2, Timeout: testTimeout})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	writes := func() map[string]error {
		_, pruneErr := r.Prune(ctx, time.Now().Add(time.Hour))
		return map[string]error{
			"commit":          r.Commit(ctx, step("x", "a", 4)),
			"commit new":      r.Commit(ctx, step("new", "a", 1)),
			"add dead letter": r.AddDeadLetter(ctx, record.DeadLetter{MessageID: "m3", At: t0}),
			"save workflow":   r.SaveWorkflow(ctx, record.WorkflowSource{Hash: "sha256:cd", Name: "w2", Source: []byte("x")}),
			"prune":           pruneErr,
			"fence":           r.Fence(ctx, 0, 1),
		}
	}
	for what, err := range writes() {
		require.ErrorIs(t, err, natsstore.ErrReadOnly, what)
	}
	require.Equal(t, before, state(), "nothing changed on the server")
	require.False(t, r.Owns(0))
	require.Equal(t, 3, look(t, w, "x").snap.Step)
	_, err = w.Workflow(ctx, "sha256:cd")
	require.ErrorIs(t, err, record.ErrUnknownWorkflow)

	// With its connection closed, the store still answers every write with
	// ErrReadOnly alone: it never sent one.
	nc.Close()
	for what, err := range writes() {
		require.ErrorIs(t, err, natsstore.ErrReadOnly, what)
		var re *natsstore.RequestError
		require.False(t, errors.As(err, &re), "%s: %v", what, err)
	}

	require.NoError(t, r.Close())
	require.ErrorIs(t, r.Commit(ctx, step("x", "a", 4)), natsstore.ErrClosed, "closed comes first")
}
