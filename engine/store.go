package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Store keeps instances and their histories. The engine writes every state
// change through Commit as one StepRecord, so a durable store can make each
// step atomic and resume an instance from its last committed step.
//
// The engine never mutates the maps of a Snapshot or an Outgoing it has
// committed; a store may keep them as they are. It reuses the Entries,
// Outbox and Settled slices after Commit returns, so a store must copy the
// elements it keeps.
type Store interface {
	// Commit records one step, all or nothing: the instance's snapshot after
	// the step, the history entries the step produced, the work it sends
	// (its outbox) and the earlier outbox items it settled.
	Commit(ctx context.Context, rec StepRecord) error
	// Instance returns an instance's last committed snapshot.
	Instance(ctx context.Context, id string) (Snapshot, error)
	// History returns an instance's history in commit order.
	History(ctx context.Context, id string) ([]Entry, error)
	// Instances lists every instance's last snapshot, sorted by id.
	Instances(ctx context.Context) ([]Snapshot, error)
	// Outbox returns the instance's outbox items not yet settled, sorted by
	// step (then key); an unknown instance is ErrUnknownInstance.
	Outbox(ctx context.Context, id string) ([]Outgoing, error)
	// AddDeadLetter keeps a message the bus gave up on.
	AddDeadLetter(ctx context.Context, d DeadLetter) error
	// DeadLetters returns every dead letter kept, in the order added.
	DeadLetters(ctx context.Context) ([]DeadLetter, error)
	// SaveWorkflow keeps a workflow's source under its hash. Saving a hash
	// already kept changes nothing.
	SaveWorkflow(ctx context.Context, w WorkflowSource) error
	// Workflow returns the source kept under hash, or ErrUnknownWorkflow.
	Workflow(ctx context.Context, hash string) (WorkflowSource, error)
}

// StepRecord is the unit of commit: what one step changed.
type StepRecord struct {
	Snapshot Snapshot
	Entries  []Entry
	// Outbox is the work the step sends (a transactional outbox): a store
	// keeps each item, under its Key, until a later step settles it. The
	// engine hands the items to the bus only after Commit has returned.
	Outbox []Outgoing
	// Settled lists the keys of earlier outbox items whose work is over
	// (their run ended, their notice was taken): a store drops them.
	Settled []string
}

// OutgoingKind says what an outbox item sends.
type OutgoingKind string

// Outbox item kinds.
const (
	OutgoingDispatch OutgoingKind = "dispatch" // the engine's own dispatch of a run
	OutgoingHandoff  OutgoingKind = "handoff"  // an agent-to-agent hand-off that starts a run
	OutgoingNotice   OutgoingKind = "notice"   // a hand-off into a terminal state (no run)
)

// Outgoing is one item of the transactional outbox: a piece of work a step
// sends, with everything needed to send it again after a restart under the
// same idempotency key and hand-off id.
type Outgoing struct {
	Key           string         `json:"key"` // the idempotency key the receiver sees (instance:step)
	Kind          OutgoingKind   `json:"kind"`
	Run           string         `json:"run,omitempty"` // the run it starts: "state", "delegate" or "branch"
	Step          int            `json:"step"`
	Attempt       int            `json:"attempt,omitempty"`
	State         string         `json:"state"`
	To            string         `json:"to"`
	From          string         `json:"from,omitempty"`
	HandoffID     string         `json:"handoff_id,omitempty"`
	Reason        string         `json:"reason,omitempty"`      // the hand-off's reason (rule, plan_step, user_request, ...)
	Explanation   string         `json:"explanation,omitempty"` // why: the rule's reason, the agent's explanation
	Task          string         `json:"task,omitempty"`
	Priority      int            `json:"priority,omitempty"`
	Rule          string         `json:"rule,omitempty"`
	Previous      map[string]any `json:"previous,omitempty"`
	Constraints   map[string]any `json:"constraints,omitempty"`
	Payload       map[string]any `json:"payload,omitempty"`
	Delegator     string         `json:"delegator,omitempty"`
	ReturnControl bool           `json:"return_control,omitempty"`
	Returned      bool           `json:"returned,omitempty"` // a return_control answer: the delegate's result going back
	Created       time.Time      `json:"created"`
}

// DeadLetter is a message the bus gave up on, as the store keeps it.
type DeadLetter struct {
	Seq       int            `json:"seq"` // set by the store: 1, 2, ... in the order added
	MessageID string         `json:"message_id"`
	Type      string         `json:"type"`
	From      string         `json:"from"`
	To        string         `json:"to"`
	Reason    string         `json:"reason"`
	Instance  string         `json:"instance,omitempty"`
	Step      int            `json:"step,omitempty"`
	Key       string         `json:"key,omitempty"` // the message's idempotency key
	At        time.Time      `json:"at"`
	Attempts  int            `json:"attempts"`
	LastError string         `json:"last_error,omitempty"`
	Content   map[string]any `json:"content,omitempty"`
}

// WorkflowSource is a workflow file as an instance started on it: the
// engine saves it under its hash, so that a tool can rebuild the engine of
// an old version and let its instances finish on their own rules.
type WorkflowSource struct {
	Hash    string    `json:"hash"`
	Name    string    `json:"name"`
	Version int       `json:"version"`
	File    string    `json:"file"`
	Source  []byte    `json:"source"`
	Saved   time.Time `json:"saved"`
}

// MemStore is the in-memory Store, the default when no durable store is
// given. Each instance has its own lock, so commits of different instances
// never contend.
type MemStore struct {
	instances sync.Map // id -> *memInstance

	mu        sync.Mutex   // guards dead and workflows
	dead      []DeadLetter // the newest MemDeadLetterLimit, and up to as many older ones
	deadSeq   int
	workflows map[string]WorkflowSource
}

var _ Store = (*MemStore)(nil)

type memInstance struct {
	mu   sync.Mutex
	snap Snapshot
	// steps holds one exactly-sized copy of each commit's entries: no
	// growing slice is copied over and over as the history lengthens.
	steps [][]Entry
	n     int
	// outbox holds the unsettled outbox items, oldest first; usually one.
	outbox []Outgoing
}

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore { return &MemStore{} }

// Commit implements Store.
func (s *MemStore) Commit(_ context.Context, rec StepRecord) error {
	v, ok := s.instances.Load(rec.Snapshot.ID)
	if !ok {
		v, _ = s.instances.LoadOrStore(rec.Snapshot.ID, &memInstance{})
	}
	mi := v.(*memInstance)
	mi.mu.Lock()
	mi.snap = rec.Snapshot
	if len(rec.Entries) > 0 {
		mi.steps = append(mi.steps, slices.Clone(rec.Entries))
		mi.n += len(rec.Entries)
	}
	if len(rec.Settled) > 0 {
		mi.outbox = slices.DeleteFunc(mi.outbox, func(o Outgoing) bool { return slices.Contains(rec.Settled, o.Key) })
	}
	for _, o := range rec.Outbox {
		if k := slices.IndexFunc(mi.outbox, func(p Outgoing) bool { return p.Key == o.Key }); k >= 0 {
			mi.outbox[k] = o
		} else {
			mi.outbox = append(mi.outbox, o)
		}
	}
	mi.mu.Unlock()
	return nil
}

// Outbox implements Store.
func (s *MemStore) Outbox(_ context.Context, id string) ([]Outgoing, error) {
	v, ok := s.instances.Load(id)
	if !ok {
		return nil, ErrUnknownInstance
	}
	mi := v.(*memInstance)
	mi.mu.Lock()
	out := slices.Clone(mi.outbox)
	mi.mu.Unlock()
	slices.SortStableFunc(out, compareOutgoing)
	return out, nil
}

// compareOutgoing orders outbox items by step, then key.
func compareOutgoing(a, b Outgoing) int {
	if c := cmp.Compare(a.Step, b.Step); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

// MemDeadLetterLimit is how many dead letters a MemStore keeps: the newest,
// as the bus's own queue does (its default limit is the same), so that a
// long-running process without a durable store does not grow without bound.
const MemDeadLetterLimit = 10_000

// AddDeadLetter implements Store. Past MemDeadLetterLimit the oldest is
// dropped; Seq keeps counting.
func (s *MemStore) AddDeadLetter(_ context.Context, d DeadLetter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deadSeq++
	d.Seq = s.deadSeq
	if len(s.dead) >= 2*MemDeadLetterLimit {
		// Drop the older half at once: amortised, each add copies O(1).
		keep := copy(s.dead, s.dead[len(s.dead)-MemDeadLetterLimit:])
		clear(s.dead[keep:])
		s.dead = s.dead[:keep]
	}
	s.dead = append(s.dead, d)
	return nil
}

// DeadLetters implements Store.
func (s *MemStore) DeadLetters(context.Context) ([]DeadLetter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.dead[max(0, len(s.dead)-MemDeadLetterLimit):]), nil
}

// SaveWorkflow implements Store.
func (s *MemStore) SaveWorkflow(_ context.Context, w WorkflowSource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.workflows[w.Hash]; ok {
		return nil
	}
	if s.workflows == nil {
		s.workflows = make(map[string]WorkflowSource)
	}
	w.Source = slices.Clone(w.Source)
	s.workflows[w.Hash] = w
	return nil
}

// Workflow implements Store.
func (s *MemStore) Workflow(_ context.Context, hash string) (WorkflowSource, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workflows[hash]
	if !ok {
		return WorkflowSource{}, fmt.Errorf("%w: %s", ErrUnknownWorkflow, hash)
	}
	w.Source = slices.Clone(w.Source)
	return w, nil
}

// Instance implements Store.
func (s *MemStore) Instance(_ context.Context, id string) (Snapshot, error) {
	v, ok := s.instances.Load(id)
	if !ok {
		return Snapshot{}, ErrUnknownInstance
	}
	mi := v.(*memInstance)
	mi.mu.Lock()
	defer mi.mu.Unlock()
	return mi.snap, nil
}

// History implements Store.
func (s *MemStore) History(_ context.Context, id string) ([]Entry, error) {
	v, ok := s.instances.Load(id)
	if !ok {
		return nil, ErrUnknownInstance
	}
	mi := v.(*memInstance)
	mi.mu.Lock()
	defer mi.mu.Unlock()
	out := make([]Entry, 0, mi.n)
	for _, step := range mi.steps {
		out = append(out, step...)
	}
	return out, nil
}

// Instances implements Store.
func (s *MemStore) Instances(_ context.Context) ([]Snapshot, error) {
	var out []Snapshot
	s.instances.Range(func(_, v any) bool {
		mi := v.(*memInstance)
		mi.mu.Lock()
		out = append(out, mi.snap)
		mi.mu.Unlock()
		return true
	})
	slices.SortFunc(out, func(a, b Snapshot) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out, nil
}
