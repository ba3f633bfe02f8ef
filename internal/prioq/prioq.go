// Package prioq is Baton's one priority mailbox: a FIFO per priority level,
// the highest level first, oldest first within a level. The in-memory bus's
// mailboxes and the engine's in-process lanes of Go agents both queue on
// it. Items are stored by value on power-of-two rings, so that queueing
// allocates nothing once a ring has grown to its working size. A Queue is
// not safe for concurrent use: its owner guards it.
package prioq

import "github.com/batonhq/baton/transport"

// Queue holds items by priority. The zero value is an empty queue.
type Queue[T any] struct {
	rings [transport.NumPriorities]ring[T]
	n     int
}

// Len returns the number of items queued.
func (q *Queue[T]) Len() int { return q.n }

// Push queues v at priority p, behind the items already at p. An invalid
// priority counts as NORMAL.
func (q *Queue[T]) Push(p transport.Priority, v T) {
	q.rings[index(p)].push(v)
	q.n++
}

// PushFront queues v at priority p ahead of every item at p: a redelivery
// keeps its place at the head of its level.
func (q *Queue[T]) PushFront(p transport.Priority, v T) {
	q.rings[index(p)].pushFront(v)
	q.n++
}

// Pop removes and returns the oldest item of the highest non-empty
// priority; ok is false when the queue is empty.
func (q *Queue[T]) Pop() (v T, ok bool) {
	for i := len(q.rings) - 1; i >= 0; i-- {
		if q.rings[i].n > 0 {
			q.n--
			return q.rings[i].pop(), true
		}
	}
	return v, false
}

// RemoveIf drops, keeping the order of the others, every item at priority
// p for which drop returns true, and returns how many it dropped.
func (q *Queue[T]) RemoveIf(p transport.Priority, drop func(T) bool) int {
	n := q.rings[index(p)].removeIf(drop)
	q.n -= n
	return n
}

// RemoveAll is RemoveIf at every priority.
func (q *Queue[T]) RemoveAll(drop func(T) bool) int {
	n := 0
	for i := range q.rings {
		n += q.rings[i].removeIf(drop)
	}
	q.n -= n
	return n
}

// Heads calls f with the first item of each non-empty priority, highest
// priority first: the oldest waiting item of each level.
func (q *Queue[T]) Heads(f func(T)) {
	for i := len(q.rings) - 1; i >= 0; i-- {
		if r := &q.rings[i]; r.n > 0 {
			f(r.buf[r.head])
		}
	}
}

func index(p transport.Priority) int {
	if !p.Valid() {
		p = transport.PriorityNormal
	}
	return p.Index()
}

// ring is a FIFO on a power-of-two circular buffer.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func (r *ring[T]) push(v T) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = v
	r.n++
}

func (r *ring[T]) pushFront(v T) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.head = (r.head - 1) & (len(r.buf) - 1)
	r.buf[r.head] = v
	r.n++
}

func (r *ring[T]) pop() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero // drop the reference for the collector
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return v
}

func (r *ring[T]) grow() {
	size := max(8, 2*len(r.buf))
	buf := make([]T, size)
	for i := 0; i < r.n; i++ {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}

func (r *ring[T]) removeIf(drop func(T) bool) int {
	var zero T
	kept := 0
	for i := 0; i < r.n; i++ {
		v := r.buf[(r.head+i)&(len(r.buf)-1)]
		if drop(v) {
			continue
		}
		r.buf[(r.head+kept)&(len(r.buf)-1)] = v
		kept++
	}
	for i := kept; i < r.n; i++ {
		r.buf[(r.head+i)&(len(r.buf)-1)] = zero
	}
	dropped := r.n - kept
	r.n = kept
	return dropped
}
