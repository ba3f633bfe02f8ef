package natsstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
)

// fillServer publishes on a stream of its own until the server refuses
// for want of storage, and returns the stream: purging it frees the
// space. At most 1,000 messages of 8 KiB: the servers it fills take far
// fewer.
func fillServer(t *testing.T, srv *natsserver.Server) jetstream.Stream {
	t.Helper()
	js, err := jetstream.New(connect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "filler", Subjects: []string{"filler"}})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 8<<10)
	for range 1000 {
		_, err := js.Publish(ctx, "filler", data)
		var api *jetstream.APIError
		if errors.As(err, &api) && api.Code == 503 {
			return st
		}
		if err != nil {
			t.Fatalf("filling the server: %v", err)
		}
	}
	t.Fatal("the server took 8 MiB under its storage limit")
	return nil
}

// A store whose commits the server refuses for want of storage says so
// (Writable), and stays refusing until a write goes through again: a
// commit, or its own test write once space is freed. The storage limit of
// JetStream stands for a full disk: the server refuses the same way.
func TestStore_Writable_FollowsTheServersStorage(t *testing.T) {
	srv := startServer(t, natsserver.Config{SyncInterval: lazySync, MaxStore: 256 << 10})
	s := openStore(t, srv, natsstore.Config{Shards: 1})
	ctx := context.Background()
	if err := s.Commit(ctx, step("a", "e", 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Writable(ctx); err != nil {
		t.Fatalf("got %v, want the store writable", err)
	}
	filler := fillServer(t, srv)
	if err := s.Writable(ctx); err != nil {
		t.Fatalf("got %v before any write was refused, want nil", err)
	}
	if err := s.Commit(ctx, step("a", "e", 2)); err == nil {
		t.Fatal("a commit went through on a full server")
	}
	if err := s.Writable(ctx); !errors.Is(err, natsstore.ErrNoStorage) {
		t.Fatalf("got %v, want an error matching ErrNoStorage", err)
	}
	if err := s.Writable(ctx); !errors.Is(err, natsstore.ErrNoStorage) {
		t.Fatalf("got %v after a test write, want an error matching ErrNoStorage", err)
	}
	if err := filler.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Writable(ctx); err != nil {
		t.Fatalf("got %v once space was freed, want the test write through", err)
	}
	// The test write leaves nothing behind: no instance, no message.
	if ids, err := s.Instances(ctx); err != nil || len(ids) != 1 {
		t.Fatalf("got instances %v (%v), want a alone", ids, err)
	}
	prefix, _, _ := strings.Cut(s.Subject("a"), ".")
	js, err := jetstream.New(connect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := js.Stream(ctx, prefix+"_steps_0")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := steps.GetLastMsgForSubject(ctx, prefix+".lease.0.probe"); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("got %v (%v) on the test writes' subject, want no message", m, err)
	}
	if err := s.Commit(ctx, step("a", "e", 2)); err != nil {
		t.Fatalf("the commit again: %v", err)
	}

	// A commit that goes through ends the refusal too.
	filler = fillServer(t, srv)
	if err := s.Commit(ctx, step("a", "e", 3)); err == nil {
		t.Fatal("a commit went through on a full server")
	}
	if err := filler.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, step("a", "e", 3)); err != nil {
		t.Fatal(err)
	}
	if err := s.Writable(ctx); err != nil {
		t.Fatalf("got %v after a commit went through, want nil", err)
	}
}
