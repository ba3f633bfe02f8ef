package natsserver_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/internal/tmpfs"
	"github.com/batonhq/baton/natsserver"
)

// A disk that fills up makes JetStream fail its writes, and nats-server
// keeps failing them once space is freed: the server sees it (Healthy),
// and restarts JetStream by itself once the disk takes writes again, on
// the same connection, with what was written before kept.
func TestServer_HealsAfterTheDiskWasFull(t *testing.T) {
	dir := tmpfs.Mount(t, 16<<20)
	s := start(t, natsserver.Config{Dir: dir + "/nats", HealthInterval: 10 * time.Millisecond})
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t"}}); err != nil {
		t.Fatal(err)
	}
	acked := uint64(0)
	publish := func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := js.Publish(pctx, "t", make([]byte, 4<<10))
		if err == nil {
			acked++
		}
		return err
	}
	if err := publish(); err != nil {
		t.Fatal(err)
	}
	if err := s.Healthy(); err != nil {
		t.Fatalf("got %v before the disk filled up, want healthy", err)
	}
	filler := tmpfs.Fill(t, dir, "filler")
	// The writes already in the stream's block in memory may still go
	// through; one reaches the disk and fails.
	for n := 0; publish() == nil; n++ {
		if n == 1000 {
			t.Fatal("1,000 writes of 4 KiB went through on a full disk")
		}
	}
	deadline := time.Now().Add(time.Minute)
	for !errors.Is(s.Healthy(), natsserver.ErrUnhealthy) {
		if time.Now().After(deadline) {
			t.Fatalf("got %v a minute after a write failed on a full disk, want an error matching ErrUnhealthy", s.Healthy())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := publish(); err == nil {
		t.Fatal("a write went through on a full disk")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(time.Minute)
	for publish() != nil || s.Healthy() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("writes still refused (healthy: %v) a minute after space was freed", s.Healthy())
		}
		time.Sleep(10 * time.Millisecond)
	}
	st, err := js.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs < acked || info.State.FirstSeq != 1 {
		t.Errorf("got %d messages from seq %d, want the %d acknowledged kept", info.State.Msgs, info.State.FirstSeq, acked)
	}
}
