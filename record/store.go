package record

import (
	"context"
	"time"
)

// Store keeps instances and their histories. The engine writes every state
// change through Commit as one Step, so a durable store can make each
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
	Commit(ctx context.Context, rec Step) error
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
	Pruner
}

// Pruner deletes finished instances, so that a long-running store does not
// grow without bound. Every Store is one; the conformance suite
// (record/storetest) checks it.
type Pruner interface {
	// Prune deletes every finished instance (completed, failed or canceled)
	// whose snapshot was last updated before before, with its history and
	// outbox, and returns how many it deleted. Running instances are never
	// deleted, however old.
	Prune(ctx context.Context, before time.Time) (int, error)
}

// Step is the unit of commit: what one step changed.
type Step struct {
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
	Run           string         `json:"run,omitempty"` // the run it starts: "state", "delegate", "branch" or "item"
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
	Index         int            `json:"index,omitempty"`    // a foreach item's index, from 0 (the item is in the history's foreach entry)
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
