package natsbus_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/internal/refundagents"
	"github.com/batonhq/baton/registry"
)

// The Go worker's handlers run within the engine's trace: the context of
// each run's handler has that run's span (sent over NATS in the work's
// traceparent) as its remote parent.
func TestWorker_HandlersJoinTheEnginesTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ns := startServer(t, false)
	re := newRefundEngine(t, connect(t, ns), memStorage, engine.WithTracerProvider(tp))
	var mu sync.Mutex
	seen := map[string]trace.SpanContext{} // by idempotency key
	hs := map[string]registry.Handler{}
	for id, h := range refundagents.Approved() {
		hs[id] = registry.HandlerFunc(func(ctx context.Context, task *registry.Task) (registry.Outcome, error) {
			mu.Lock()
			seen[task.IdempotencyKey] = trace.SpanContextFromContext(ctx)
			mu.Unlock()
			return h.Handle(ctx, task)
		})
	}
	startWorker(t, connect(t, ns), hs, memStorage)
	insts := runRefunds(t, re.eng, 2)

	runs := 0
	for _, s := range exp.GetSpans() {
		if s.Name == "invoke_workflow refund" {
			continue
		}
		var inst string
		var step int64
		for _, kv := range s.Attributes {
			switch kv.Key {
			case attribute.Key("gen_ai.conversation.id"):
				inst = kv.Value.AsString()
			case attribute.Key("baton.step"):
				step = kv.Value.AsInt64()
			}
		}
		runs++
		mu.Lock()
		got := seen[inst+":"+strconv.FormatInt(step, 10)]
		mu.Unlock()
		if got.TraceID() != s.SpanContext.TraceID() || got.SpanID() != s.SpanContext.SpanID() || !got.IsRemote() {
			t.Errorf("%s (%s step %d): the handler saw %s/%s, want the run's span %s/%s as a remote parent",
				s.Name, inst, step, got.TraceID(), got.SpanID(), s.SpanContext.TraceID(), s.SpanContext.SpanID())
		}
	}
	if runs != 4*len(insts) {
		t.Errorf("got %d run spans, want %d", runs, 4*len(insts))
	}
}
