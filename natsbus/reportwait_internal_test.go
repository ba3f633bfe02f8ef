package natsbus

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/batonhq/baton/wire"
)

// replyConn is a connection to a new in-process server (no JetStream), and
// reportReplies on it.
func replyConn(t *testing.T) (*nats.Conn, *reportReplies) {
	t.Helper()
	ns, err := server.NewServer(&server.Options{DontListen: true, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	r, err := newReportReplies(nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	return nc, r
}

// TestReportReplies_ALateAnswerIsNotTheNextOnes sends a report whose
// answer comes only after its wait gave up, then another: the second gets
// its own answer, not the late one, and the errors are Report's.
func TestReportReplies_ALateAnswerIsNotTheNextOnes(t *testing.T) {
	nc, r := replyConn(t)
	ctx := context.Background()
	rep := wire.Report{InstanceID: "i", Step: 1, Agent: "a", Trigger: "done"}

	// No engine listens: no responders, at once.
	if _, err := r.report(ctx, &rep, time.Minute); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("got %v, want nats.ErrNoResponders", err)
	}

	reqs := make(chan *nats.Msg, 4)
	sub, err := nc.Subscribe(ReportsSubject, func(m *nats.Msg) { reqs <- m })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// The first report's answer is held until its wait gave up.
	if _, err := r.report(ctx, &rep, time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("got %v, want nats.ErrTimeout", err)
	}
	first := <-reqs
	if err := first.Respond(wire.EncodeAnswer(wire.Answer{OK: false, Code: wire.CodeStale})); err != nil {
		t.Fatal(err)
	}
	go func() {
		m := <-reqs
		_ = m.Respond(wire.EncodeAnswer(wire.Answer{OK: true}))
	}()
	rep.Step = 2
	ans, err := r.report(ctx, &rep, time.Minute)
	if err != nil || !ans.OK {
		t.Fatalf("got %+v, %v; want the second report's own answer (ok)", ans, err)
	}

	// A context that ended is its error.
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.report(done, &rep, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.waits) != 0 {
		t.Errorf("%d waits left, want none", len(r.waits))
	}
}
