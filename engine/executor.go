package engine

import "sync"

// Executor runs the engine's work: agent runs, timer callbacks, deliveries.
// The default is a pool of worker goroutines owned by the engine; a scenario
// replay passes a clock.Sim, which runs everything in one goroutine in a
// deterministic order.
type Executor interface {
	// Submit queues f. It must not block for long and must not run f inline.
	Submit(f func())
}

// pool is the default Executor: a fixed set of workers over an unbounded
// FIFO, so that Submit never blocks (work submitted from inside work or from
// a timer can never deadlock the pool).
type pool struct {
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []func()
	head   int
	closed bool
	wg     sync.WaitGroup
}

func newPool(workers int) *pool {
	p := &pool{}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(workers)
	for range workers {
		go p.work()
	}
	return p
}

func (p *pool) Submit(f func()) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.queue = append(p.queue, f)
	p.mu.Unlock()
	p.cond.Signal()
}

func (p *pool) work() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		for p.head == len(p.queue) && !p.closed {
			p.cond.Wait()
		}
		if p.closed {
			p.mu.Unlock()
			return
		}
		f := p.queue[p.head]
		p.queue[p.head] = nil
		p.head++
		if p.head == len(p.queue) {
			p.queue, p.head = p.queue[:0], 0
		}
		p.mu.Unlock()
		f()
	}
}

// close stops the workers once they finish their current work and waits for
// them; queued work is dropped. Safe to call twice.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
	p.wg.Wait()
}
