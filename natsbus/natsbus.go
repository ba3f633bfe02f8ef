package natsbus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/batonhq/baton/internal/jsretry"
	"github.com/batonhq/baton/transport"
)

// Transport is the engine's work transport on NATS JetStream: it gives
// external agents their work through one work-queue stream per agent and
// shares dead letters and accounting with every other process on the same
// NATS system. It implements engine.Transport. Create it with New and Close
// it when done; the NATS connection stays the caller's.
type Transport struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	cfg Config
	log *zap.Logger
	id  string // this Transport's origin id, on the dead letters it publishes

	ackWaitSecs any // the metadata's ack_wait, the same on every work sent

	mu     sync.Mutex
	boxes  map[string]*mailbox // by agent id
	taken  map[string]*flight  // by message id: messages this process holds
	due    flightHeap
	closed bool

	cbMu   sync.RWMutex // held for reading while callbacks run
	cbs    map[int]func(transport.DeadLetter)
	nextCb int
	cbDone bool

	inbox   string // prefix of the pulls' reply subjects
	pullSub *nats.Subscription
	pmu     sync.Mutex
	pulls   map[string]chan *nats.Msg // by reply token
	pullSeq atomic.Uint64

	deadCons jetstream.ConsumeContext
	advSub   *nats.Subscription
	sent     *sentWork          // the work this Transport stored, for the dead letters of work agents terminate
	sentSub  *nats.Subscription // answers the others' asks for it
	wake     chan struct{}
	done     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once

	counters
}

// counters are this process's own counts of the operations it made.
type counters struct {
	acks, nacks, rejects, duplicates, redeliveries, invalid atomic.Uint64
	deletedPending                                          atomic.Uint64
}

// mailbox is what a Transport knows of one agent's work stream. The
// subjects of each level are built once, not on every send and pull.
type mailbox struct {
	agent     string
	stream    jetstream.Stream
	cons      [len(levels)]jetstream.Consumer
	next      [len(levels)]string // the consumers' next-messages API subjects
	subjects  [len(levels)]string // the levels' work subjects
	pullKeys  [len(levels)]string // <stream>.<consumer>: how routePull tells a level's deliveries
	pullMu    [len(levels)]sync.Mutex
	pullCh    [len(levels)]chan *nats.Msg // held with pullMu
	pullTimer [len(levels)]*time.Timer    // held with pullMu
	capacity  int
}

// newMailbox is agent's mailbox on stream s, its consumers still to be set.
func newMailbox(agent string, s jetstream.Stream) *mailbox {
	mb := &mailbox{agent: agent, stream: s, capacity: int(s.CachedInfo().Config.MaxMsgs)}
	name := s.CachedInfo().Config.Name
	for i, p := range levels {
		mb.next[i] = nextSubject(name, levelToken(p))
		mb.subjects[i] = WorkSubject(agent, p)
		mb.pullKeys[i] = name + "." + levelToken(p)
	}
	return mb
}

// New returns a Transport on nc with cfg (start from DefaultConfig). It
// creates the dead-letter stream if it does not exist and starts following
// it, so that the callbacks of OnDeadLetter see the dead letters of every
// process.
func New(ctx context.Context, nc *nats.Conn, cfg Config) (*Transport, error) {
	if nc == nil {
		return nil, errors.New("natsbus: nil connection")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("natsbus: %w", err)
	}
	t := &Transport{
		nc: nc, js: js, cfg: cfg, log: cfg.Logger, id: uuid.NewString(),
		boxes: map[string]*mailbox{}, taken: map[string]*flight{}, cbs: map[int]func(transport.DeadLetter){},
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		inbox: nc.NewInbox() + ".", pulls: map[string]chan *nats.Msg{}, sent: newSentWork(),
		ackWaitSecs: firstAckWait(&cfg),
	}
	if t.pullSub, err = nc.Subscribe(t.inbox+"*", t.routePull); err != nil {
		return nil, fmt.Errorf("natsbus: %w", err)
	}
	if err := t.followDeadLetters(ctx); err != nil {
		_ = t.pullSub.Unsubscribe()
		return nil, err
	}
	t.wg.Add(1)
	go t.sweep()
	return t, nil
}

// Close stops following dead letters and terminated messages and stops the
// ack-wait sweep, waiting for them. Messages still taken are redelivered by
// the server after their ack wait. Safe to call twice.
func (t *Transport) Close() error {
	t.once.Do(func() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		close(t.done)
		if t.advSub != nil {
			_ = t.advSub.Unsubscribe()
		}
		if t.sentSub != nil {
			_ = t.sentSub.Unsubscribe()
		}
		_ = t.pullSub.Unsubscribe()
		if t.deadCons != nil {
			t.deadCons.Stop()
			<-t.deadCons.Closed()
		}
		t.wg.Wait()
		t.cbMu.Lock()
		t.cbDone = true
		t.cbMu.Unlock()
	})
	return nil
}

func (t *Transport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// OpenMailbox creates agent's work stream, at most capacity messages (0:
// Config.Capacity), and its consumers, one per priority level. A stream that
// exists keeps its capacity and messages; its consumers take this
// Transport's ack wait and backoff.
func (t *Transport) OpenMailbox(agent string, capacity int) error {
	if t.isClosed() {
		return ErrClosed
	}
	if agent == "" {
		return &transport.ValidationError{Field: "agent", Reason: "is required"}
	}
	if capacity <= 0 {
		capacity = t.cfg.Capacity
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*t.cfg.Timeout)
	defer cancel()
	sc := jetstream.StreamConfig{
		Name:        WorkStream(agent),
		Description: "Baton work of agent " + agent,
		Subjects:    []string{WorkPrefix + Token(agent) + ".*"},
		Retention:   jetstream.WorkQueuePolicy,
		MaxMsgs:     int64(capacity),
		Discard:     jetstream.DiscardNew,
		Duplicates:  t.cfg.DedupWindow,
		Storage:     t.cfg.Storage,
		Replicas:    t.cfg.Replicas,
	}
	if t.cfg.AsyncPersist {
		sc.PersistMode = jetstream.AsyncPersistMode
	}
	s, err := openStream(ctx, t.js, sc, t.cfg.Timeout)
	if err != nil {
		return fmt.Errorf("natsbus: open the mailbox of %s: %w", agent, err)
	}
	mb := newMailbox(agent, s)
	for i, p := range levels {
		c, err := jsretry.Do(ctx, jsretry.Per(t.cfg.Timeout), func(ctx context.Context) (jetstream.Consumer, error) {
			return s.CreateOrUpdateConsumer(ctx, t.consumerConfig(agent, p, mb.capacity))
		})
		if err != nil {
			return fmt.Errorf("natsbus: open the mailbox of %s: consumer %s: %w", agent, levelToken(p), err)
		}
		mb.cons[i] = c
	}
	t.mu.Lock()
	t.boxes[agent] = mb
	t.mu.Unlock()
	return nil
}

// consumerConfig is the durable pull consumer of agent's work at level p.
// The server redelivers without limit: natsbus counts the deliveries itself
// and dead-letters a message after MaxDeliveries, since the server's own
// limit only announces it by an advisory that nobody may be listening to.
func (t *Transport) consumerConfig(agent string, p transport.Priority, capacity int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       levelToken(p),
		Description:   "Baton work of agent " + agent + " at priority " + p.String(),
		FilterSubject: WorkSubject(agent, p),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       t.cfg.AckWait,
		BackOff:       t.cfg.Backoff,
		MaxDeliver:    -1,
		MaxAckPending: capacity,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
}

// box returns agent's mailbox, looking for its stream on the server when
// another process opened it. An agent without a stream is a
// *transport.UnknownAgentError.
func (t *Transport) box(ctx context.Context, agent string) (*mailbox, error) {
	t.mu.Lock()
	mb, ok := t.boxes[agent]
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if ok {
		return mb, nil
	}
	s, err := t.js.Stream(ctx, WorkStream(agent))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, &transport.UnknownAgentError{Agent: agent}
	}
	if err != nil {
		return nil, fmt.Errorf("natsbus: find the mailbox of %s: %w", agent, err)
	}
	mb = newMailbox(agent, s)
	for i, p := range levels {
		c, err := s.Consumer(ctx, levelToken(p))
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			c, err = s.CreateOrUpdateConsumer(ctx, t.consumerConfig(agent, p, mb.capacity))
		}
		if err != nil {
			return nil, fmt.Errorf("natsbus: find the mailbox of %s: consumer %s: %w", agent, levelToken(p), err)
		}
		mb.cons[i] = c
	}
	t.mu.Lock()
	if have, ok := t.boxes[agent]; ok {
		mb = have
	} else {
		t.boxes[agent] = mb
	}
	t.mu.Unlock()
	return mb, nil
}

// nextSubject is the JetStream API subject that asks a consumer for its
// next messages.
func nextSubject(stream, consumer string) string {
	return "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer
}

// openStream creates a stream, or opens it when another process created it
// first, trying again while JetStream leaves a request unanswered.
func openStream(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig, timeout time.Duration) (jetstream.Stream, error) {
	return jsretry.Do(ctx, jsretry.Per(timeout), func(ctx context.Context) (jetstream.Stream, error) {
		s, err := js.CreateStream(ctx, sc)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return js.Stream(ctx, sc.Name)
		}
		return s, err
	})
}
