package engine

import (
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
)

// The engine's records are those of package record; these names keep the
// engine's API readable on its own.
type (
	// Store keeps instances and their histories; see record.Store.
	Store = record.Store
	// StepRecord is the unit of commit; see record.Step.
	StepRecord = record.Step
	// Snapshot is an instance's state after its last committed step.
	Snapshot = record.Snapshot
	// Entry is one line of an instance's history.
	Entry = record.Entry
	// Kind names an entry of an instance's history.
	Kind = record.Kind
	// Status is an instance's life-cycle status.
	Status = record.Status
	// Outgoing is one item of the transactional outbox.
	Outgoing = record.Outgoing
	// OutgoingKind says what an outbox item sends.
	OutgoingKind = record.OutgoingKind
	// DeadLetter is a message the bus gave up on, as the store keeps it.
	DeadLetter = record.DeadLetter
	// WorkflowSource is a workflow file as an instance started on it.
	WorkflowSource = record.WorkflowSource
	// MemStore is the in-memory Store.
	MemStore = record.MemStore
	// Usage is an instance's usage: its totals, each agent's and the
	// current visit's; see registry.Ledger.
	Usage = registry.Ledger
)

// The history kinds, statuses and outbox kinds of package record.
const (
	KindStarted      = record.KindStarted
	KindDispatch     = record.KindDispatch
	KindHandoff      = record.KindHandoff
	KindFinalNotice  = record.KindFinalNotice
	KindNoticeTaken  = record.KindNoticeTaken
	KindAgentRun     = record.KindAgentRun
	KindOutcome      = record.KindOutcome
	KindCondition    = record.KindCondition
	KindRuleFired    = record.KindRuleFired
	KindTransition   = record.KindTransition
	KindRetry        = record.KindRetry
	KindLimitHit     = record.KindLimitHit
	KindLateReply    = record.KindLateReply
	KindReturned     = record.KindReturned
	KindSelected     = record.KindSelected
	KindJoined       = record.KindJoined
	KindWaiting      = record.KindWaiting
	KindSignal       = record.KindSignal
	KindForeach      = record.KindForeach
	KindChild        = record.KindChild
	KindCompleted    = record.KindCompleted
	KindFailed       = record.KindFailed
	KindCanceled     = record.KindCanceled
	StatusRunning    = record.StatusRunning
	StatusCompleted  = record.StatusCompleted
	StatusFailed     = record.StatusFailed
	StatusCanceled   = record.StatusCanceled
	OutgoingDispatch = record.OutgoingDispatch
	OutgoingHandoff  = record.OutgoingHandoff
	OutgoingNotice   = record.OutgoingNotice
	// MemDeadLetterLimit is how many dead letters a MemStore keeps.
	MemDeadLetterLimit = record.MemDeadLetterLimit
)

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore { return record.NewMemStore() }
