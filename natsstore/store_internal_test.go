package natsstore

import (
	"context"
	"errors"
	"testing"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/record"
)

// TestPublish_ResendOfAWriteMade: a commit sent again under the same
// message id after its first send was written (its answer lost) succeeds
// with the first write's revision and writes nothing more; a real conflict
// stays one.
func TestPublish_ResendOfAWriteMade(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	s, err := Open(ctx, nc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data, err := encodeStep(record.Snapshot{ID: "i", Step: 1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	first, err := s.publishAs(ctx, "m-1", "i", data, 0)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.publishAs(ctx, "m-1", "i", data, 0)
	if err != nil || again != first {
		t.Fatalf("resend: got revision %d, %v; want %d, nil", again, err, first)
	}
	info, err := s.stream("i").Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("got %d messages, want 1: the resend wrote again", info.State.Msgs)
	}
	_, err = s.publishAs(ctx, "m-2", "i", data, 0)
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("another write expecting no instance: got %v, want ErrFenced", err)
	}
}
