package cputime_test

import (
	"testing"

	"github.com/batonhq/baton/internal/cputime"
)

func TestProcess_GrowsWithWork(t *testing.T) {
	before := cputime.Process()
	x := 0
	for k := range 50_000_000 {
		x ^= k * k
	}
	_ = x
	if after := cputime.Process(); after <= before {
		t.Errorf("got %v after work, %v before: want it to grow", after, before)
	}
}
