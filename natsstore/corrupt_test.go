package natsstore_test

import (
	"context"
	"encoding/base64"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
	"github.com/batonhq/baton/record"
)

// raw returns a plain JetStream client on srv, to write what no store
// would: damaged records, as a buggy or hostile client or a damaged disk
// leaves them.
func raw(t *testing.T, srv *natsserver.Server) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(connect(t, srv))
	require.NoError(t, err)
	return js
}

func requireCorrupt(t *testing.T, err error, what string) {
	t.Helper()
	require.ErrorIs(t, err, natsstore.ErrCorrupt, what)
	var ce *natsstore.CorruptError
	require.True(t, errors.As(err, &ce), "%s: got %T, want a *CorruptError", what, err)
	require.NotZero(t, ce.Seq, "%s: the error says which record", what)
}

func TestStore_CorruptStep(t *testing.T) {
	damaged := []struct {
		name string
		data string
	}{
		{"not json", "\x00\xffgarbage"},
		{"truncated", `{"format":1,"snapshot":{"id":"i"`},
		{"no format", `{"snapshot":{"id":"i"}}`},
		{"future format", `{"format":99,"snapshot":{"id":"i"}}`},
		{"another instance's snapshot", `{"format":1,"snapshot":{"id":"other"}}`},
		{"wrong types", `{"format":1,"snapshot":{"id":"i","step":"two"}}`},
	}
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	js := raw(t, srv)
	ctx := context.Background()
	for _, d := range damaged {
		t.Run(d.name, func(t *testing.T) {
			s := openStore(t, srv, natsstore.Config{Timeout: testTimeout})
			require.NoError(t, s.Commit(ctx, step("good", "a", 1)))
			require.NoError(t, s.Commit(ctx, step("i", "a", 1)))
			_, err := js.Publish(ctx, s.Subject("i"), []byte(d.data))
			require.NoError(t, err)

			_, err = s.Instance(ctx, "i")
			requireCorrupt(t, err, "instance")
			_, err = s.History(ctx, "i")
			requireCorrupt(t, err, "history")
			_, err = s.Outbox(ctx, "i")
			requireCorrupt(t, err, "outbox")
			// The list leaves the damaged instance out and keeps the
			// others, so that they resume.
			snaps, err := s.Instances(ctx)
			require.NoError(t, err, "instances")
			require.Equal(t, []string{"good"}, ids(snaps))
			_, err = s.Prune(ctx, time.Now())
			require.NoError(t, err, "prune")
			// The other instance reads as before.
			require.Equal(t, 1, look(t, s, "good").snap.Step)
		})
	}
}

// TestStore_CorruptStepInHistory damages a step in the middle of a history:
// the last step still reads, the history does not.
func TestStore_CorruptStepInHistory(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	s := openStore(t, srv, natsstore.Config{Timeout: testTimeout})
	js := raw(t, srv)
	ctx := context.Background()
	subject := s.Subject("i")
	require.NoError(t, s.Commit(ctx, step("i", "a", 1)))
	_, err := js.Publish(ctx, subject, []byte("{"))
	require.NoError(t, err)
	_, err = s.Instance(ctx, "i")
	requireCorrupt(t, err, "instance")
	// A store that found the last step damaged did not learn its revision:
	// it cannot write after it.
	requireFenced(t, s.Commit(ctx, step("i", "a", 2)), "i")

	_, err = js.Publish(ctx, subject, []byte(`{"format":1,"snapshot":{"id":"i","step":3}}`))
	require.NoError(t, err)
	snap, err := s.Instance(ctx, "i")
	require.NoError(t, err)
	require.Equal(t, 3, snap.Step)
	_, err = s.History(ctx, "i")
	requireCorrupt(t, err, "history")
}

func TestStore_CorruptSubject(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	s := openStore(t, srv, natsstore.Config{Timeout: testTimeout})
	ctx := context.Background()
	require.NoError(t, s.Commit(ctx, step("i", "a", 1)))
	js := raw(t, srv)
	for _, bad := range []struct{ token, data string }{
		{"not*base64!", `{"format":1,"snapshot":{"id":"x"}}`},
		// A hashed token whose record is of an id that does not hash to it.
		{"=" + strings.Repeat("A", 43), `{"format":1,"snapshot":{"id":"x"}}`},
		{"=" + strings.Repeat("B", 43), `not json`},
	} {
		_, err := js.Publish(ctx, s.Prefix()+".step.0."+bad.token, []byte(bad.data))
		require.NoError(t, err)
	}
	snaps, err := s.Instances(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"i"}, ids(snaps), "the records on subjects no id has are left out")
}

func TestStore_CorruptDeadLetterAndWorkflow(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	s := openStore(t, srv, natsstore.Config{Timeout: testTimeout})
	js := raw(t, srv)
	ctx := context.Background()
	require.NoError(t, s.AddDeadLetter(ctx, record.DeadLetter{MessageID: "ok", At: t0}))
	_, err := js.Publish(ctx, s.Prefix()+".dead", []byte(`{"format":1,"dead_letter":{"attempts":"many"}}`))
	require.NoError(t, err)
	_, err = s.DeadLetters(ctx)
	requireCorrupt(t, err, "dead letters")

	kv, err := js.KeyValue(ctx, s.Prefix()+"_workflows")
	require.NoError(t, err)
	for hash, data := range map[string]string{
		"sha256:garbage": "garbage",
		"sha256:moved":   `{"format":1,"workflow":{"hash":"sha256:other"}}`,
		"sha256:old":     `{"workflow":{"hash":"sha256:old"}}`,
	} {
		_, err = kv.Put(ctx, base64.RawURLEncoding.EncodeToString([]byte(hash)), []byte(data))
		require.NoError(t, err)
		_, err = s.Workflow(ctx, hash)
		requireCorrupt(t, err, "workflow "+hash)
	}
}

// TestStore_EncodeError: a value with no JSON form fails the commit, names
// its field and writes nothing.
func TestStore_EncodeError(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync})
	s := openStore(t, srv, natsstore.Config{Timeout: testTimeout})
	ctx := context.Background()
	require.NoError(t, s.Commit(ctx, step("i", "a", 1)))
	before := look(t, s, "i")
	for field, mutate := range map[string]func(*record.Step){
		"snapshot":   func(st *record.Step) { st.Snapshot.Context = map[string]any{"x": math.NaN()} },
		"entries[0]": func(st *record.Step) { st.Entries[0].Result = map[string]any{"f": func() {}} },
		"outbox[0]":  func(st *record.Step) { st.Outbox[0].Payload = map[string]any{"c": make(chan int)} },
	} {
		st := step("i", "a", 2)
		mutate(&st)
		err := s.Commit(ctx, st)
		var ee *natsstore.EncodeError
		require.True(t, errors.As(err, &ee), "%s: got %v, want an *EncodeError", field, err)
		require.Equal(t, field, ee.Field)
		require.Equal(t, "i", ee.Instance)
	}
	require.Equal(t, before, look(t, s, "i"))
	require.NoError(t, s.Commit(ctx, step("i", "a", 2)), "a failed encoding leaves the fence where it was")
}

// TestStore_TooLarge: a step larger than the server takes is refused
// before it is sent, with the sizes.
func TestStore_TooLarge(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync, MaxPayload: 64 << 10})
	s := openStore(t, srv, natsstore.Config{Timeout: testTimeout})
	ctx := context.Background()
	st := step("i", "a", 1)
	st.Snapshot.Context = map[string]any{"blob": string(make([]byte, 100<<10))}
	err := s.Commit(ctx, st)
	require.ErrorIs(t, err, natsstore.ErrTooLarge)
	var tl *natsstore.TooLargeError
	require.True(t, errors.As(err, &tl))
	require.Equal(t, int64(64<<10), tl.Max)
	require.Greater(t, tl.Size, 100<<10)
	_, err = s.Instance(ctx, "i")
	require.ErrorIs(t, err, record.ErrUnknownInstance)
	require.NoError(t, s.Commit(ctx, step("i", "a", 1)))
}
