package engine

import (
	"testing"
	"unsafe"
)

// TestSizes holds an instance and a run within the allocation size classes
// they were brought to: an instance waiting on an agent is mostly these two,
// and a run is allocated at every step its instance cannot reuse its run
// for. A field added past them moves each to the next class (480 and 384
// bytes): keep rare fields apart, as tracing, usage, progress, retries and
// cancels are.
func TestSizes(t *testing.T) {
	if n := unsafe.Sizeof(instance{}); n > 448 {
		t.Errorf("an instance is %d bytes, want at most 448", n)
	}
	if n := unsafe.Sizeof(run{}); n > 352 {
		t.Errorf("a run is %d bytes, want at most 352", n)
	}
}
