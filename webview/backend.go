package webview

import (
	"context"
	"time"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// Status values an Instance shows: a running instance in a wait state is
// waiting.
const (
	StatusRunning   = "running"
	StatusWaiting   = "waiting"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

var statuses = []string{StatusRunning, StatusWaiting, StatusCompleted, StatusFailed, StatusCancelled}

// Backend is what the view reads and what its actions call. Errors are
// ErrNotFound for an unknown instance, a *RefusedError for an action
// refused, anything else for a store or engine that did not answer.
type Backend interface {
	// Instances lists the instances f selects, newest first, one page.
	Instances(ctx context.Context, f Filter) (Page, error)
	// Instance returns one instance.
	Instance(ctx context.Context, id string) (Instance, error)
	// History returns an instance's history, as wfrun replay reads it.
	History(ctx context.Context, id string) ([]record.Entry, error)
	// Outbox returns an instance's outbox items not yet settled.
	Outbox(ctx context.Context, id string) ([]record.Outgoing, error)
	// DeadLetters lists the dead letters f selects, newest first, one page.
	DeadLetters(ctx context.Context, f DeadLetterFilter) (DeadLetterPage, error)
	// Workflows lists the workflows and their versions, by name.
	Workflows(ctx context.Context) ([]Workflow, error)
	// Definition returns the workflow version with that hash, or
	// ErrNotFound.
	Definition(ctx context.Context, hash string) (*rules.Workflow, error)
	// Watch calls changed after each event of instance (of every instance
	// when instance is ""), until stop is called. changed is called on the
	// engine's goroutine and must not block. done is closed when the
	// backend shuts down: the view's event streams end then.
	Watch(instance string, changed func()) (stop func(), done <-chan struct{}, err error)
	// Signal sends the signal name with data to a waiting instance.
	Signal(ctx context.Context, id, name string, data map[string]any) error
	// Select hands the instance's current step to a selectable agent.
	Select(ctx context.Context, id, agent, explanation string) error
	// Cancel cancels an instance that has not finished, for the reason
	// given (may be empty).
	Cancel(ctx context.Context, id, reason string) error
}

// Instance is an instance as the view shows it.
type Instance struct {
	ID       string
	Workflow string
	Version  int
	Hash     string // the workflow version's hash, to find its diagram
	Status   string // one of the Status values
	State    string
	Step     int
	Outcome  string
	Error    string
	// CancelReason is the reason given with a cancel, for a cancelled
	// instance (whose Error is empty).
	CancelReason string
	Context      map[string]any
	Created      time.Time
	Updated      time.Time
	// Usage is what the instance's runs used, as their agents reported:
	// the totals and each agent's (Visit is not shown).
	Usage registry.Ledger
	// OnLimit names the limit that sent a completed instance to the
	// workflow's on_limit state; "" when it completed otherwise.
	OnLimit string
	// Pending is what an unfinished instance waits on.
	Pending []Pending
	// NoConsumer lists the agents of its pending runs that have nobody
	// taking their work (NATS agents not live); a backend fills it for
	// Instance, not for lists.
	NoConsumer []string
	// Progress is what the runs under way have said, by step; a backend
	// fills it for Instance (a ProgressLog keeps it), not for lists.
	Progress []RunProgress
}

// Finished reports whether the instance has ended.
func (in Instance) Finished() bool {
	return in.Status == StatusCompleted || in.Status == StatusFailed || in.Status == StatusCancelled
}

// Filter selects instances. Zero fields select everything.
type Filter struct {
	Workflow string
	Version  int
	Status   string
	State    string
	IDPrefix string
	// Since and Until bound the creation time: Since <= created < Until.
	Since, Until time.Time
	// Cursor is the Next of the previous page.
	Cursor string
	Limit  int
}

// Match reports whether f selects in, paging aside.
func (f Filter) Match(in Instance) bool {
	switch {
	case f.Workflow != "" && in.Workflow != f.Workflow,
		f.Version != 0 && in.Version != f.Version,
		f.Status != "" && in.Status != f.Status,
		f.State != "" && in.State != f.State,
		f.IDPrefix != "" && (len(in.ID) < len(f.IDPrefix) || in.ID[:len(f.IDPrefix)] != f.IDPrefix),
		!f.Since.IsZero() && in.Created.Before(f.Since),
		!f.Until.IsZero() && !in.Created.Before(f.Until):
		return false
	}
	return true
}

// Page is one page of instances; Next is empty on the last page.
type Page struct {
	Instances []Instance
	Next      string
}

// DeadLetterFilter selects dead letters.
type DeadLetterFilter struct {
	Reason string
	Cursor string
	Limit  int
}

// DeadLetterPage is one page of dead letters; Next is empty on the last.
type DeadLetterPage struct {
	DeadLetters []record.DeadLetter
	Next        string
}

// Workflow is a workflow and its versions.
type Workflow struct {
	Name        string
	Description string
	Versions    []Version // current first, then newest first
}

// Version is one version of a workflow.
type Version struct {
	Def       *rules.Workflow
	Current   bool // its file is among those served
	Instances int  // how many instances the store has of it
}
