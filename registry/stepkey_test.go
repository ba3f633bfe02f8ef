package registry_test

import (
	"testing"

	"github.com/batonhq/baton/registry"
)

func TestStepKey_SplitsBackIntoInstanceAndStep(t *testing.T) {
	tests := []struct {
		instance string
		step     int
		key      string
	}{
		{"refund-1", 3, "refund-1:3"},
		{"tenant:refund-1", 12, "tenant:refund-1:12"}, // an id with ':' keeps it
		{"", 0, ":0"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := registry.StepKey(tt.instance, tt.step); got != tt.key {
				t.Fatalf("StepKey(%q, %d) = %q, want %q", tt.instance, tt.step, got, tt.key)
			}
			if id, step := registry.SplitStepKey(tt.key); id != tt.instance || step != tt.step {
				t.Errorf("SplitStepKey(%q) = %q, %d, want %q, %d", tt.key, id, step, tt.instance, tt.step)
			}
		})
	}
}

func TestSplitStepKey_KeyWithoutAStep(t *testing.T) {
	if id, step := registry.SplitStepKey("refund-1"); id != "refund-1" || step != 0 {
		t.Errorf(`SplitStepKey("refund-1") = %q, %d, want "refund-1", 0`, id, step)
	}
	if id, step := registry.SplitStepKey("refund-1:x"); id != "refund-1" || step != 0 {
		t.Errorf(`SplitStepKey("refund-1:x") = %q, %d, want "refund-1", 0`, id, step)
	}
}

func TestTask_Key(t *testing.T) {
	task := &registry.Task{InstanceID: "refund-1", Step: 2}
	if got := task.Key(); got != "refund-1:2" {
		t.Errorf("got %q, want the step's key refund-1:2", got)
	}
	task.IdempotencyKey = "refund-1:2#resent.1"
	if got := task.Key(); got != task.IdempotencyKey {
		t.Errorf("got %q, want the task's own key %q", got, task.IdempotencyKey)
	}
}
