package server

import "testing"

// BenchmarkHub_Subscribe measures what an open event stream holds in the
// hub while it waits: its subscriber and the buffer of its channel.
func BenchmarkHub_Subscribe(b *testing.B) {
	h := newHub(16)
	all := func(Event) bool { return true }
	b.ReportAllocs()
	for b.Loop() {
		_, s, _ := h.subscribe(0, false, all)
		h.unsubscribe(s)
	}
}
