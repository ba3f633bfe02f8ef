package wire_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/wire"
)

func TestTraceparent_FormatAndJoin(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	tp := wire.FormatTraceparent(sc)
	if tp != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Fatalf("got %q, want the W3C form", tp)
	}
	got := trace.SpanContextFromContext(wire.ContextWithTraceparent(context.Background(), tp))
	if got.TraceID() != tid || got.SpanID() != sid || !got.IsRemote() || !got.IsSampled() {
		t.Errorf("got %v, want the remote span context of %s", got, tp)
	}
	if s := wire.FormatTraceparent(trace.SpanContext{}); s != "" {
		t.Errorf("got %q for an invalid span context, want nothing", s)
	}
	// A derived traceparent joins too; nonsense leaves the context alone.
	if !trace.SpanContextFromContext(wire.ContextWithTraceparent(context.Background(), wire.Traceparent("i", "i:1"))).IsValid() {
		t.Error("a derived traceparent did not join")
	}
	for _, bad := range []string{"", "00-x", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
		if trace.SpanContextFromContext(wire.ContextWithTraceparent(context.Background(), bad)).IsValid() {
			t.Errorf("%q: got a span context, want none", bad)
		}
	}
}

func FuzzContextWithTraceparent(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	f.Add("")
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra")
	f.Fuzz(func(t *testing.T, tp string) {
		sc := trace.SpanContextFromContext(wire.ContextWithTraceparent(context.Background(), tp))
		// The same as otel extracts from a header map.
		want := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp}))
		if !sc.Equal(want) {
			t.Fatalf("%q: got %v, want %v", tp, sc, want)
		}
		if !sc.IsValid() {
			return
		}
		// What joined writes back as the same trace and span.
		back := trace.SpanContextFromContext(wire.ContextWithTraceparent(context.Background(), wire.FormatTraceparent(sc)))
		if back.TraceID() != sc.TraceID() || back.SpanID() != sc.SpanID() {
			t.Errorf("%q: got %v back, want %v", tp, back, sc)
		}
	})
}
