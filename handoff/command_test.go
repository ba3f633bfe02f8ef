package handoff_test

import (
	"testing"

	"github.com/batonhq/baton/handoff"
)

func TestReason(t *testing.T) {
	for _, r := range []handoff.Reason{handoff.ReasonRule, handoff.ReasonPlanStep, handoff.ReasonCapabilityMatch,
		handoff.ReasonUserRequest, handoff.ReasonErrorRecovery, handoff.ReasonClarification} {
		if !r.Valid() {
			t.Errorf("%q.Valid() = false, want true", r)
		}
		if got, want := r.Dynamic(), r != handoff.ReasonRule; got != want {
			t.Errorf("%q.Dynamic() = %v, want %v", r, got, want)
		}
	}
	if handoff.Reason("Rule").Valid() {
		t.Errorf(`Reason("Rule").Valid() = true, want false`)
	}
}
