package wire

import (
	"context"
	"encoding/hex"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// FormatTraceparent writes sc as a W3C traceparent (version 00): the form
// the work's traceparent and an HTTP agent's traceparent header take. It
// returns "" for a span context that is not valid.
func FormatTraceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	b := make([]byte, 0, 55)
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	return string(b)
}

// ContextWithTraceparent returns ctx carrying the span context of the W3C
// traceparent tp as a remote parent, so that spans a handler starts from
// ctx join the trace of the work. A tp that is empty or not a valid
// traceparent leaves ctx as it is.
func ContextWithTraceparent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, traceparentCarrier(tp))
}

// traceparentCarrier carries one traceparent to otel's extraction: a
// propagation.MapCarrier made a map for it on every run of a work.
type traceparentCarrier string

func (c traceparentCarrier) Get(key string) string {
	if key == KeyTraceparent {
		return string(c)
	}
	return ""
}

func (traceparentCarrier) Set(string, string) {}

func (traceparentCarrier) Keys() []string { return []string{KeyTraceparent} }
