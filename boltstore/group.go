package boltstore

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// group commits the writes of concurrent callers together: a caller that
// finds no transaction being written writes its own at once; callers that
// arrive meanwhile queue, and the first of them then writes the whole queue
// in one transaction (one fsync) for all of them. Unlike bbolt's DB.Batch it
// never waits for company, so a lone commit costs what Update costs, and it
// starts no goroutine: the leader is always one of the callers.
type group struct {
	db  *bolt.DB
	max int

	mu    sync.Mutex
	queue []*pending
	busy  bool // a leader is writing

	// The leader's: there is one leader at a time.
	batch []*pending
	errs  []error
}

type pending struct {
	fn func(*bolt.Tx) error
	ch chan error // the result, or errLead
}

// errLead tells a queued caller that it is the next leader.
var errLead = errors.New("lead")

var pendings = sync.Pool{New: func() any { return &pending{ch: make(chan error, 1)} }}

// do runs fn in a write transaction, shared with other callers' functions.
// fn may run more than once: when a function of the group fails, the
// transaction is rolled back and each function runs again in one of its own.
func (g *group) do(fn func(*bolt.Tx) error) error {
	p := pendings.Get().(*pending)
	p.fn = fn
	defer func() { p.fn = nil; pendings.Put(p) }()

	g.mu.Lock()
	g.queue = append(g.queue, p)
	if g.busy {
		g.mu.Unlock()
		if err := <-p.ch; err != errLead {
			return err
		}
		g.mu.Lock()
	}
	g.busy = true
	n := min(len(g.queue), g.max)
	g.batch = append(g.batch[:0], g.queue[:n]...)
	rest := copy(g.queue, g.queue[n:])
	clear(g.queue[rest:])
	g.queue = g.queue[:rest]
	g.mu.Unlock()

	errs := g.write(g.batch)
	var mine error
	for i, q := range g.batch {
		if q == p {
			mine = errs[i]
			continue
		}
		q.ch <- errs[i]
	}

	// Hand over only now: the next leader reuses g.batch and g.errs.
	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].ch <- errLead
	} else {
		g.busy = false
	}
	g.mu.Unlock()
	return mine
}

// write runs the batch's functions in one transaction; if one fails, it runs
// each in a transaction of its own so that only the failing one fails.
func (g *group) write(batch []*pending) []error {
	g.errs = append(g.errs[:0], make([]error, len(batch))...)
	failed := false
	err := update(g.db, func(tx *bolt.Tx) error {
		for _, q := range batch {
			if err := safeCall(q.fn, tx); err != nil {
				failed = true
				return err
			}
		}
		return nil
	})
	for i, q := range batch {
		switch {
		case !failed:
			g.errs[i] = err
		case len(batch) == 1:
			g.errs[i] = err
		default:
			g.errs[i] = update(g.db, q.fn)
		}
	}
	return g.errs
}

// safeCall runs fn, turning a panic into an error: one caller's failure,
// whatever its form, must not fail the others of its group.
func safeCall(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{p}
		}
	}()
	return fn(tx)
}

// update is db.Update with a panic of bbolt (a damaged page met while
// writing) turned into an error, so that no caller of a group is left
// waiting on a leader that never returns.
func update(db *bolt.DB, fn func(*bolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{p}
		}
	}()
	return db.Update(fn)
}

// panicError is a panic met while writing, most likely bbolt meeting a
// damaged page; Commit reports it as a *CorruptError.
type panicError struct{ v any }

func (e *panicError) Error() string { return fmt.Sprintf("bbolt panicked: %v", e.v) }
