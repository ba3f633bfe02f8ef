package feature

import "sync"

// callbacks holds the functions subscribed to one kind of event (a
// pressure change, a dead-letter alert) and calls them in subscription
// order, outside its lock, so that a callback may subscribe or cancel.
// The zero value is ready to use.
type callbacks[T any] struct {
	mu   sync.Mutex
	next int
	subs []subscription[T]
}

type subscription[T any] struct {
	id int
	f  func(T)
}

// add subscribes f until the returned function is called; a nil f
// subscribes nothing.
func (c *callbacks[T]) add(f func(T)) (cancel func()) {
	if f == nil {
		return func() {}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	c.subs = append(c.subs, subscription[T]{id, f})
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for k, s := range c.subs {
			if s.id == id {
				c.subs = append(c.subs[:k:k], c.subs[k+1:]...)
				return
			}
		}
	}
}

// call calls every function subscribed now with v, oldest first.
func (c *callbacks[T]) call(v T) {
	c.mu.Lock()
	subs := c.subs // add and cancel never write into a slice handed out here
	c.mu.Unlock()
	for _, s := range subs {
		s.f(v)
	}
}

// clear drops every subscription.
func (c *callbacks[T]) clear() {
	c.mu.Lock()
	c.subs = nil
	c.mu.Unlock()
}
