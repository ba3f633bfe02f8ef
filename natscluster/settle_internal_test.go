package natscluster

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/batonhq/baton/natsserver"
	"github.com/batonhq/baton/natsstore"
)

// flakyFence is a store's Fence that fails the first fails calls for the
// first partition it is asked to fence, as a steps stream electing a leader
// answers: JetStream's 503 "temporarily unavailable".
type flakyFence struct {
	store *natsstore.Store
	fails int

	mu      sync.Mutex
	target  int // -1 until the first call
	refused int
}

func (f *flakyFence) fence(ctx context.Context, p int, token uint64) error {
	f.mu.Lock()
	if f.target < 0 {
		f.target = p
	}
	refuse := p == f.target && f.refused < f.fails
	if refuse {
		f.refused++
	}
	f.mu.Unlock()
	if refuse {
		return &natsstore.RequestError{Op: "fence partition", Err: &jetstream.APIError{
			Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}}
	}
	return f.store.Fence(ctx, p, token)
}

func (f *flakyFence) partition() (p, refused int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.target, f.refused
}

// A partition whose lease the node took but whose fence the server refused
// (503) is fenced again until it goes through, and resumed: it is not left
// leased in this node's name and fenced by none while the node fills its
// share with other partitions (seen in the cluster test when an engine was
// cut off: its partitions' reports were answered "being taken over" for
// minutes). The node shares the partitions with a second engine, "b",
// whose heartbeats the test writes: the node's share is half of them, and
// the other half stay free, so that it has others to take instead.
func TestNode_ALeasedPartitionIsFencedAgainUntilItIs(t *testing.T) {
	const parts = 8
	srv, err := natsserver.Start(natsserver.Config{Dir: t.TempDir(), SyncInterval: time.Minute})
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
	store, err := natsstore.Open(ctx, nc, natsstore.Config{Prefix: "f", Partitions: parts, Shards: 2, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	// b's heartbeats, on the node's bucket, until the test ends.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "f_leases", History: 1})
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 500 * time.Millisecond
	beat := func() {
		if _, err := kv.Put(ctx, memberKey+"b", []byte("other "+time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
			t.Error(err)
		}
	}
	beat()
	stop, beating := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(beating)
		tk := time.NewTicker(ttl / 5)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				beat()
			}
		}
	}()
	defer func() { close(stop); <-beating }()

	var mu sync.Mutex
	var resumed []int
	ff := &flakyFence{store: store, fails: 4, target: -1}
	n, err := start(ctx, nc, store, Config{Name: "a", LeaseTTL: ttl, Timeout: time.Minute,
		OnAcquire: func(_ context.Context, ps []int) error {
			mu.Lock()
			resumed = append(resumed, ps...)
			mu.Unlock()
			return nil
		}}, ff.fence)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()

	deadline := time.Now().Add(time.Minute)
	for {
		p, refused := ff.partition()
		mu.Lock()
		done := p >= 0 && slices.Contains(resumed, p)
		mu.Unlock()
		if done && refused == ff.fails {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition %d refused %d times, resumed %v: want it fenced and resumed once the fence went through", p, refused, resumed)
		}
		time.Sleep(5 * time.Millisecond)
	}
	p, _ := ff.partition()
	if !store.Owns(p) || !slices.Contains(n.Partitions(), p) {
		t.Fatalf("the store owns partition %d: %v; the node's partitions: %v; want it owned", p, store.Owns(p), n.Partitions())
	}
	if got := len(n.Partitions()); got != parts/2 {
		t.Errorf("the node owns %d partitions, want its share %d", got, parts/2)
	}
}
