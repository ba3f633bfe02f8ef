package server_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/tmpfs"
	"github.com/batonhq/baton/server"
)

// natsFixture is a fixture on the embedded NATS server, with a client
// connection of the test's own to that server.
func natsFixture(t *testing.T, opts ...option) (*fixture, jetstream.JetStream) {
	t.Helper()
	var url string
	opts = append(opts, func(c *server.Config) { c.OnNATS = func(u string) { url = u } })
	f := newFixture(t, opts...)
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return f, js
}

// waitReady polls /readyz until it answers want (bounded).
func (f *fixture) waitReady(want int) {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := f.do("GET", "/readyz", nil)
		if code == want {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("/readyz answers %d (%v) after a minute, want %d", code, body, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// refusedStartLeavesNothing starts an instance under id and wants it
// refused with 503 and nowhere to be found.
func (f *fixture) refusedStartLeavesNothing(id string) {
	f.t.Helper()
	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": id, "input": map[string]any{}})
	require.Equal(f.t, 503, code, "a start on a full disk: %v", body)
	code, body = f.do("GET", "/v1/instances/"+id, nil)
	require.Equal(f.t, 404, code, "the refused start left an instance: %v", body)
}

// started starts an instance under id and wants it accepted.
func (f *fixture) started(id string) {
	f.t.Helper()
	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": id, "input": map[string]any{}})
	require.Equal(f.t, 201, code, "a start once space was freed: %v", body)
	code, body = f.do("GET", "/v1/instances/"+id, nil)
	require.Equal(f.t, 200, code, "%v", body)
}

// A server whose NATS storage is full refuses starts with 503, leaving no
// instance, and says it is not ready; once space is freed it takes starts
// again and is ready, without a restart. JetStream's storage limit stands
// for the disk here (the server answers writes past it as on a full disk,
// "insufficient resources"), so that the test needs no root; the next test
// fills a real file system.
func TestServer_FullStorage_RefusesStartsUntilSpaceIsFreed(t *testing.T) {
	f, js := natsFixture(t, func(c *server.Config) { c.NATSMaxStore = 1 << 20 })
	ctx := context.Background()
	f.started("before")
	f.waitReady(200)
	filler, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "filler", Subjects: []string{"filler"}})
	require.NoError(t, err)
	full := false
	for range 1000 { // 8 MiB at most, past the 1 MiB limit
		_, err := js.Publish(ctx, "filler", make([]byte, 8<<10))
		var api *jetstream.APIError
		if errors.As(err, &api) && api.Code == 503 {
			full = true
			break
		}
		require.NoError(t, err)
	}
	require.True(t, full, "the server took 8 MiB under its 1 MiB limit")

	f.refusedStartLeavesNothing("during")
	f.waitReady(503)
	require.NoError(t, filler.Purge(ctx))
	f.waitReady(200)
	f.started("during") // the same id: nothing of the refused start is in the way
	f.started("after")
}

// The same on a disk that is really full: a small tmpfs (it needs root,
// and is skipped with the reason logged without). nats-server fails every
// write of a stream once one failed on a full disk, until JetStream is
// loaded again: the server does that by itself once space is freed.
func TestServer_FullDisk_RefusesStartsUntilSpaceIsFreed(t *testing.T) {
	disk := tmpfs.Mount(t, 32<<20)
	f, js := natsFixture(t, func(c *server.Config) { c.DataDir = filepath.Join(disk, "data") })
	ctx := context.Background()
	f.started("before")
	f.waitReady(200)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "filler", Subjects: []string{"filler"}})
	require.NoError(t, err)
	filler := tmpfs.Fill(t, disk, "filler")
	// A write reaches the full disk and fails: the server's JetStream
	// answers no write from then on.
	for n := 0; ; n++ {
		require.Less(t, n, 1000, "1,000 writes of 4 KiB went through on a full disk")
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := js.Publish(pctx, "filler", make([]byte, 4<<10))
		cancel()
		if err != nil {
			break
		}
	}
	f.waitReady(503)
	f.refusedStartLeavesNothing("during")
	require.NoError(t, os.Remove(filler))
	f.waitReady(200)
	f.started("during")
	f.started("after")
}
