package agentmain

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/batonhq/baton/registry"
)

func TestRun_RefusesAnUnknownAgent(t *testing.T) {
	nop := registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{}, nil
	})
	// Refused before it connects: NATS_URL names nothing that listens.
	t.Setenv("NATS_URL", "nats://127.0.0.1:1")
	err := Run(context.Background(), "test-agents", map[string]registry.Handler{"a": nop, "b": nop}, []string{"-agents", "a,c"}, io.Discard)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `no agent "c" (have a, b)`) {
		t.Fatalf("Run = %v, want a usage error naming c and the agents there are", err)
	}
	if err := Run(context.Background(), "test-agents", nil, []string{"-replicas", "x"}, io.Discard); !errors.As(err, &ue) {
		t.Fatalf("Run with a bad flag = %v, want a usage error", err)
	}
}
