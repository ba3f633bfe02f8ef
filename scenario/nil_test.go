package scenario_test

import (
	"context"
	"testing"

	"github.com/batonhq/baton/scenario"
)

// TestRun_NilArguments runs a nil scenario and a nil context: errors, not
// panics.
func TestRun_NilArguments(t *testing.T) {
	s, err := scenario.Load("../examples/refund/scenarios/approved.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var nilCtx context.Context
	if _, err := scenario.Run(nilCtx, s, nil); err == nil {
		t.Error("Run(nil ctx): got nil, want an error")
	}
	if _, err := scenario.Run(context.Background(), nil, nil); err == nil {
		t.Error("Run(nil scenario): got nil, want an error")
	}
}
