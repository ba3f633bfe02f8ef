package engine

import (
	"sync"
	"testing"
)

// TestInstance_DoneChan holds the done channel made on demand to what a
// channel made with the instance gave: the same channel at every call
// before the end, closed once at the end, and closed for a caller who
// asks, before, during or after it, from any goroutine (run with -race).
func TestInstance_DoneChan(t *testing.T) {
	i := &instance{}
	c := i.doneChan()
	if i.doneChan() != c {
		t.Fatal("two calls got two channels, want one")
	}
	if !i.closeDone() || i.closeDone() {
		t.Fatal("closeDone did not report one close")
	}
	for _, ch := range []<-chan struct{}{c, i.doneChan()} {
		select {
		case <-ch:
		default:
			t.Fatal("a channel is open after the end, want closed")
		}
	}

	for range 50 {
		i := &instance{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { <-i.doneChan() })
		}
		wg.Go(func() { i.closeDone() })
		wg.Wait() // a waiter left on an open channel never returns
	}
}
