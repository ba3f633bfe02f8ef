package engine

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/wire"
)

// Traces. With a tracer provider (WithTracerProvider) an instance is a span
// "invoke_workflow {workflow}", child of the span in the context given to
// Start, and each run a span "invoke_agent {agent}" under it, from the
// moment its work is sent to the agent's report. A Go handler's context
// carries its run's span; the work an external agent takes carries it as a
// W3C traceparent, and so does an HTTP agent's call. Without a provider no
// span is made: a Go handler's context carries the span context of the
// caller of Start, if it had one, and external work carries a traceparent
// in the caller's trace, or one derived from the instance (wire.Traceparent).
//
// A run whose agent reported usage has gen_ai.usage.input_tokens,
// gen_ai.usage.output_tokens, gen_ai.response.model (when named) and
// baton.usage.cost (when not zero) on its span.
//
// Attribute names are plain strings: the GenAI semantic conventions are
// still moving.

// Span names and attribute keys.
const (
	spanWorkflow = "invoke_workflow"
	spanAgent    = "invoke_agent"

	attrOperation    = attribute.Key("gen_ai.operation.name")
	attrAgentName    = attribute.Key("gen_ai.agent.name")
	attrConversation = attribute.Key("gen_ai.conversation.id")
	attrWorkflow     = attribute.Key("baton.workflow")
	attrVersion      = attribute.Key("baton.version")
	attrStep         = attribute.Key("baton.step")
	attrState        = attribute.Key("baton.state")
	attrAttempt      = attribute.Key("baton.attempt")
	attrRule         = attribute.Key("baton.rule")
	attrTrigger      = attribute.Key("baton.trigger")
	attrErrorKind    = attribute.Key("baton.error.kind")
	attrStatus       = attribute.Key("baton.status")
	attrOutcome      = attribute.Key("baton.outcome")
	attrResumed      = attribute.Key("baton.resumed")
	attrFrom         = attribute.Key("baton.from")
	attrDelay        = attribute.Key("baton.delay")
	attrLimit        = attribute.Key("baton.limit")
	attrInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	attrModel        = attribute.Key("gen_ai.response.model")
	attrCost         = attribute.Key("baton.usage.cost")
)

// startTrace begins the instance's trace: its span when the engine traces,
// as a child of ctx's span; otherwise it keeps ctx's span context, for the
// runs to carry.
func (i *instance) startTrace(ctx context.Context, resumed bool) {
	if i.e.tracer == nil {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			i.traced = &instanceTrace{sc: sc}
		}
		return
	}
	attrs := []attribute.KeyValue{
		attrOperation.String(spanWorkflow), attrConversation.String(i.id),
		attrWorkflow.String(i.e.wf.Name), attrVersion.Int(i.e.wf.Version),
	}
	if resumed {
		attrs = append(attrs, attrResumed.Bool(true))
	}
	_, span := i.e.tracer.Start(ctx, spanWorkflow+" "+i.e.wf.Name, trace.WithAttributes(attrs...))
	i.traced = &instanceTrace{span: span, sc: span.SpanContext()}
}

// instanceTrace is an instance's part in tracing: its span, when the
// engine traces, and the span context its runs are children of (the span's,
// or the caller's). Most instances have neither: it is kept apart, so that
// an instance waiting on an agent is smaller.
type instanceTrace struct {
	span trace.Span
	sc   trace.SpanContext
}

// rootSpan is the instance's span; nil when the engine does not trace or
// the span has ended.
func (i *instance) rootSpan() trace.Span {
	if i.traced == nil {
		return nil
	}
	return i.traced.span
}

// spanContext is what the instance's runs are children of: its span's
// context or the caller's; invalid when there is neither.
func (i *instance) spanContext() trace.SpanContext {
	if i.traced == nil {
		return trace.SpanContext{}
	}
	return i.traced.sc
}

// endTrace ends the instance's span, with how the instance ended.
func (i *instance) endTrace() {
	s := i.rootSpan()
	if s == nil {
		return
	}
	i.traced.span = nil
	s.SetAttributes(attrStatus.String(string(i.status)), attrState.String(i.state.Name))
	if i.outcome != "" {
		s.SetAttributes(attrOutcome.String(i.outcome))
	}
	if i.status == record.StatusFailed && i.err != nil {
		s.SetStatus(codes.Error, i.err.Error())
	}
	s.End()
}

// traceEvent adds an event to the instance's span, when it has one.
func (i *instance) traceEvent(name string, attrs ...attribute.KeyValue) {
	if s := i.rootSpan(); s != nil {
		s.AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// traceRun starts the span of run r, whose work is being sent; rule is the
// rule that handed it over, if any.
func (i *instance) traceRun(r *run, rule string) {
	span := i.rootSpan()
	if span == nil {
		return
	}
	kind := trace.SpanKindInternal
	if i.e.lanes[r.agent] == nil {
		kind = trace.SpanKindProducer // an external agent takes the work from the transport
	}
	attrs := []attribute.KeyValue{
		attrOperation.String(spanAgent), attrAgentName.String(r.agent), attrConversation.String(i.id),
		attrWorkflow.String(i.e.wf.Name), attrStep.Int(r.step), attrState.String(r.state.Name),
		attrAttempt.Int(r.attempt),
	}
	if rule != "" {
		attrs = append(attrs, attrRule.String(rule))
	}
	if r.from != "" {
		attrs = append(attrs, attrFrom.String(r.from))
	}
	ctx := trace.ContextWithSpan(context.Background(), span)
	_, r.span = i.e.tracer.Start(ctx, spanAgent+" "+r.agent, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// endSpan ends the span of run r, if it has one, with its report: the
// trigger, or the error and its kind. A run abandoned (its instance
// finished, the engine closed) ends with neither.
func (r *run) endSpan(trigger, kind string, err error) {
	if r.span == nil {
		return
	}
	s := r.span
	r.span = nil
	if trigger != "" {
		s.SetAttributes(attrTrigger.String(trigger))
	}
	if err != nil {
		s.SetAttributes(attrErrorKind.String(kind))
		s.SetStatus(codes.Error, err.Error())
	}
	s.End()
}

// spanUsage puts what run r used on its span, when its agent reported
// usage: the tokens (both, zero included, as the gen-ai conventions read
// them), the model and the cost when given.
func (r *run) spanUsage(u registry.Usage) {
	if r.span == nil || u.IsZero() {
		return
	}
	r.span.SetAttributes(attrInputTokens.Int64(u.InputTokens), attrOutputTokens.Int64(u.OutputTokens))
	if u.Model != "" {
		r.span.SetAttributes(attrModel.String(u.Model))
	}
	if u.Cost > 0 {
		r.span.SetAttributes(attrCost.Float64(u.Cost))
	}
}

// handlerContext is the context a Go handler of run r runs with: the
// engine's, with the run's span (or the caller's span context).
func (i *instance) handlerContext(r *run) context.Context {
	switch {
	case r.span != nil:
		return trace.ContextWithSpan(i.e.ctx, r.span)
	case i.spanContext().IsValid():
		return trace.ContextWithSpanContext(i.e.ctx, i.spanContext())
	}
	return i.e.ctx
}

// traceparent is the W3C trace context the work of r carries: its span's,
// the caller's, or one derived from the instance and the step.
func (i *instance) traceparent(r *run) string {
	switch {
	case r.span != nil:
		return wire.FormatTraceparent(r.span.SpanContext())
	case i.spanContext().IsValid():
		return wire.FormatTraceparent(i.spanContext())
	}
	return wire.Traceparent(i.id, r.key)
}
