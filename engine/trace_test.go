package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/wire"
)

// tracing is a tracer provider that keeps every ended span in memory.
func tracing(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// attrs renders a span's attributes as key=value, sorted.
func attrs(kvs []attribute.KeyValue) []string {
	var out []string
	for _, kv := range kvs {
		out = append(out, string(kv.Key)+"="+kv.Value.Emit())
	}
	slices.Sort(out)
	return out
}

// spanNamed returns the ended spans named name, in the order they ended.
func spansNamed(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// traceparentOf is the traceparent of a span context, as the engine writes it.
func traceparentOf(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

func TestEngine_Trace_SpansPerInstanceAndRun(t *testing.T) {
	tp, exp := tracing(t)
	// alpha and beta are Go handlers that record the span context they see;
	// gamma is external.
	seen := map[string]trace.SpanContext{}
	tasks := map[string]string{}
	handler := func(trigger string) registry.Handler {
		return registry.HandlerFunc(func(ctx context.Context, task *registry.Task) (registry.Outcome, error) {
			seen[task.Agent] = trace.SpanContextFromContext(ctx)
			tasks[task.Agent] = task.Traceparent
			return registry.Outcome{Trigger: trigger}, nil
		})
	}
	w := loadWorkflow(t, "chain.yaml")
	reg, err := engine.NewRegistry(w, map[string]registry.Handler{"alpha": handler("next"), "beta": handler("next")})
	if err != nil {
		t.Fatal(err)
	}
	sim := clock.NewSim(epoch)
	eng, err := newEngine(w, reg, engine.WithClock(sim), engine.WithExecutor(sim), engine.WithIDs(counter("tr")), engine.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()

	// The caller's span is the instance span's parent.
	ctx, caller := tp.Tracer("test").Start(t.Context(), "caller")
	inst, err := eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	caller.End()
	if err := sim.Run(t.Context(), func() bool { return len(spansNamed(exp, "invoke_agent beta")) == 1 }); err != nil {
		t.Fatal(err)
	}
	m, err := busOf(eng).ReceiveWait(t.Context(), "gamma")
	if err != nil {
		t.Fatal(err)
	}
	if err := reportWork(t.Context(), eng, m, registry.Outcome{Trigger: "next"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := sim.Run(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	wantCompleted(t, inst.Result(), "DONE")

	flows := spansNamed(exp, "invoke_workflow chain")
	if len(flows) != 1 {
		t.Fatalf("got %d instance spans, want 1", len(flows))
	}
	flow := flows[0]
	if flow.SpanContext.TraceID() != caller.SpanContext().TraceID() || flow.Parent.SpanID() != caller.SpanContext().SpanID() {
		t.Errorf("instance span: got trace %s parent %s, want the caller's span %s", flow.SpanContext.TraceID(), flow.Parent.SpanID(), caller.SpanContext().SpanID())
	}
	want := []string{
		"baton.outcome=DONE", "baton.state=DONE", "baton.status=completed", "baton.version=1", "baton.workflow=chain",
		"gen_ai.conversation.id=tr-1", "gen_ai.operation.name=invoke_workflow",
	}
	if got := attrs(flow.Attributes); !slices.Equal(got, want) {
		t.Errorf("instance span attributes:\ngot  %q\nwant %q", got, want)
	}
	var fired []string
	for _, e := range flow.Events {
		if e.Name == "rule_fired" {
			fired = append(fired, attrs(e.Attributes)[0])
		}
	}
	if !slices.Equal(fired, []string{"baton.rule=a_to_b", "baton.rule=b_to_c", "baton.rule=c_done"}) {
		t.Errorf("got rule_fired span events %q, want the three rules", fired)
	}

	for _, tt := range []struct {
		agent string
		step  int
		rule  string
		kind  trace.SpanKind
	}{
		{"alpha", 1, "", trace.SpanKindInternal},
		{"beta", 2, "a_to_b", trace.SpanKindInternal},
		{"gamma", 3, "b_to_c", trace.SpanKindProducer},
	} {
		runs := spansNamed(exp, "invoke_agent "+tt.agent)
		if len(runs) != 1 {
			t.Fatalf("got %d spans of %s, want 1", len(runs), tt.agent)
		}
		s := runs[0]
		if s.Parent.SpanID() != flow.SpanContext.SpanID() || s.SpanContext.TraceID() != flow.SpanContext.TraceID() || s.SpanKind != tt.kind {
			t.Errorf("%s: got parent %s kind %s, want the instance span, kind %s", tt.agent, s.Parent.SpanID(), s.SpanKind, tt.kind)
		}
		want := []string{
			"baton.attempt=1", fmt.Sprintf("baton.step=%d", tt.step), "baton.trigger=next", "baton.workflow=chain",
			"gen_ai.agent.name=" + tt.agent, "gen_ai.conversation.id=tr-1", "gen_ai.operation.name=invoke_agent",
		}
		st, _ := w.State(map[string]string{"alpha": "FIRST", "beta": "SECOND", "gamma": "THIRD"}[tt.agent])
		want = append(want, "baton.state="+st.Name)
		if tt.rule != "" {
			want = append(want, "baton.rule="+tt.rule, "baton.from="+map[string]string{"beta": "alpha", "gamma": "beta"}[tt.agent])
		}
		slices.Sort(want)
		if got := attrs(s.Attributes); !slices.Equal(got, want) {
			t.Errorf("%s span attributes:\ngot  %q\nwant %q", tt.agent, got, want)
		}
		// A Go handler's context carries its run's span; external work its
		// traceparent.
		if tt.kind == trace.SpanKindInternal {
			if seen[tt.agent].SpanID() != s.SpanContext.SpanID() || tasks[tt.agent] != traceparentOf(s.SpanContext) {
				t.Errorf("%s: handler saw span %s and traceparent %q, want its run's %s", tt.agent, seen[tt.agent].SpanID(), tasks[tt.agent], s.SpanContext.SpanID())
			}
		} else if got := m.Metadata[wire.KeyTraceparent]; got != traceparentOf(s.SpanContext) {
			t.Errorf("external work: got traceparent %v, want %s", got, traceparentOf(s.SpanContext))
		}
	}
}

func TestEngine_Trace_RetriedRunsAreSpansWithErrors(t *testing.T) {
	tp, exp := tracing(t)
	r := newSimRun(t, "retry.yaml", map[string][]reply{"worker": {fail("rate limited"), ok("done", nil)}}, engine.WithTracerProvider(tp))
	r.finish(nil)
	runs := spansNamed(exp, "invoke_agent worker")
	if len(runs) != 2 {
		t.Fatalf("got %d worker spans, want 2", len(runs))
	}
	if runs[0].Status.Code != codes.Error || !strings.Contains(runs[0].Status.Description, "rate limited") || !slices.Contains(attrs(runs[0].Attributes), "baton.error.kind=error") {
		t.Errorf("first attempt: got status %+v attributes %q, want an error of kind error", runs[0].Status, attrs(runs[0].Attributes))
	}
	if !slices.Contains(attrs(runs[1].Attributes), "baton.attempt=2") || runs[1].Status.Code == codes.Error {
		t.Errorf("second attempt: got %q status %+v, want attempt 2 without error", attrs(runs[1].Attributes), runs[1].Status)
	}
	flow := spansNamed(exp, "invoke_workflow retry")
	if len(flow) != 1 || !slices.ContainsFunc(flow[0].Events, func(e sdktrace.Event) bool { return e.Name == "retry_scheduled" }) {
		t.Errorf("got instance spans %+v, want one with a retry_scheduled event", flow)
	}
}

func TestEngine_Trace_FailedAndAbandoned(t *testing.T) {
	tp, exp := tracing(t)
	// The instance fails: its span is an error. A cancelled instance's
	// open run span ends too.
	r := newSimRun(t, "chain.yaml", map[string][]reply{"alpha": {ok("nonsense", nil)}}, engine.WithTracerProvider(tp))
	r.finish(nil)
	flow := spansNamed(exp, "invoke_workflow chain")
	if len(flow) != 1 || flow[0].Status.Code != codes.Error || !slices.Contains(attrs(flow[0].Attributes), "baton.status=failed") {
		t.Fatalf("got %+v, want a failed instance span", flow)
	}
	exp.Reset()
	r = newSimRun(t, "wait.yaml", map[string][]reply{"writer": {takes(time.Hour, ok("drafted", nil))}}, engine.WithTracerProvider(tp))
	inst, err := r.eng.Start(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.Cancel(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(spansNamed(exp, "invoke_agent writer")); n != 1 {
		t.Errorf("got %d writer spans after the cancel, want the abandoned run's", n)
	}
	if f := spansNamed(exp, "invoke_workflow wait"); len(f) != 1 || !slices.Contains(attrs(f[0].Attributes), "baton.status=canceled") {
		t.Errorf("got %+v, want the cancelled instance's span", f)
	}
	r.settle()
}

// Without a tracer provider no span is made; a handler still sees the
// caller's span context, and external work carries it.
func TestEngine_Trace_WithoutProviderCarriesTheCallersContext(t *testing.T) {
	tp, exp := tracing(t)
	var seen trace.SpanContext
	r := newSimRun(t, "chain.yaml", map[string][]reply{"alpha": {func(ctx context.Context, _ *clock.Sim, _ *registry.Task) (registry.Outcome, error) {
		seen = trace.SpanContextFromContext(ctx)
		return registry.Outcome{Trigger: "next"}, nil
	}}})
	ctx, caller := tp.Tracer("test").Start(t.Context(), "caller")
	defer caller.End()
	inst, err := r.eng.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.runUntil(r.queued("beta"))
	if !seen.Equal(caller.SpanContext()) {
		t.Errorf("handler saw %v, want the caller's span context", seen)
	}
	m, err := busOf(r.eng).ReceiveWait(t.Context(), "beta")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Metadata[wire.KeyTraceparent]; got != traceparentOf(caller.SpanContext()) {
		t.Errorf("got traceparent %v, want the caller's %s", got, traceparentOf(caller.SpanContext()))
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("got %d spans, want none without a provider", n)
	}
	_ = inst.Cancel(t.Context())
}

// A resumed instance is running again in its new engine, its run is told
// as sent again (reason resume), and its trace starts anew, marked resumed,
// with the resent work carrying the new run span.
func TestEngine_Resume_IsCountedToldAndTraced(t *testing.T) {
	ctx := context.Background()
	store := record.NewMemStore()
	w := loadWorkflow(t, "chain.yaml")
	build := func(opts ...engine.Option) *engine.Engine {
		reg, err := engine.NewRegistry(w, nil)
		if err != nil {
			t.Fatal(err)
		}
		eng, err := newEngine(w, reg, append([]engine.Option{engine.WithStore(store)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = eng.Close() })
		return eng
	}
	first := build()
	inst, err := first.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := first.Metrics().Running; n != 1 {
		t.Errorf("got %d running in the first engine, want 1", n)
	}
	if _, err := busOf(first).ReceiveWait(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	_ = first.Close()

	tp, exp := tracing(t)
	var told []engine.Event
	second := build(engine.WithTracerProvider(tp), engine.WithObserver(func(ev engine.Event) { told = append(told, ev) }))
	if _, err := second.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if n := second.Metrics().Running; n != 1 {
		t.Errorf("got %d running after the resume, want 1", n)
	}
	if len(told) != 1 || told[0].Type != engine.EventRunStarted || told[0].Reason != "resume" || told[0].Agent != "alpha" || told[0].InstanceID != inst.ID() {
		t.Errorf("got events %+v, want alpha's run sent again", told)
	}
	m, err := busOf(second).ReceiveWait(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if err := reportWork(ctx, second, m, registry.Outcome{Trigger: "nonsense"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := second.Metrics().Running; n != 0 {
		t.Errorf("got %d running after the instance failed, want 0", n)
	}
	flow := spansNamed(exp, "invoke_workflow chain")
	runs := spansNamed(exp, "invoke_agent alpha")
	if len(flow) != 1 || !slices.Contains(attrs(flow[0].Attributes), "baton.resumed=true") || len(runs) != 1 {
		t.Fatalf("got instance spans %d (%v) and alpha spans %d, want one resumed instance span and one run", len(flow), flow, len(runs))
	}
	if m.Metadata[wire.KeyTraceparent] != traceparentOf(runs[0].SpanContext) || runs[0].Parent.SpanID() != flow[0].SpanContext.SpanID() {
		t.Errorf("got traceparent %v, want the resumed run's span %s", m.Metadata[wire.KeyTraceparent], traceparentOf(runs[0].SpanContext))
	}
}

// A run that reported usage has it on its span, a failed run's included;
// a run that reported none has no usage attributes.
func TestEngine_Trace_RunSpansCarryUsage(t *testing.T) {
	tp, exp := tracing(t)
	used := func(u registry.Usage, trigger string, err error) reply {
		return func(context.Context, *clock.Sim, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: trigger, Usage: u}, err
		}
	}
	r := newSimRun(t, "retry.yaml", map[string][]reply{"worker": {
		fail("no usage"),
		used(registry.Usage{InputTokens: 100}, "", errors.New("overloaded")),
		used(registry.Usage{InputTokens: 1000, OutputTokens: 250, Cost: 0.5, Model: "big-1"}, "done", nil),
	}}, engine.WithTracerProvider(tp))
	r.finish(nil)
	runs := spansNamed(exp, "invoke_agent worker")
	if len(runs) != 3 {
		t.Fatalf("got %d worker spans, want 3", len(runs))
	}
	usageOf := func(s tracetest.SpanStub) []string {
		var out []string
		for _, a := range attrs(s.Attributes) {
			if strings.HasPrefix(a, "gen_ai.usage.") || strings.HasPrefix(a, "gen_ai.response.") || strings.HasPrefix(a, "baton.usage.") {
				out = append(out, a)
			}
		}
		return out
	}
	for k, want := range [][]string{
		nil,
		{"gen_ai.usage.input_tokens=100", "gen_ai.usage.output_tokens=0"},
		{"baton.usage.cost=0.5", "gen_ai.response.model=big-1", "gen_ai.usage.input_tokens=1000", "gen_ai.usage.output_tokens=250"},
	} {
		if got := usageOf(runs[k]); !slices.Equal(got, want) {
			t.Errorf("attempt %d: got usage attributes %q, want %q", k+1, got, want)
		}
	}
}
