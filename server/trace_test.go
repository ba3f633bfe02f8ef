package server_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/wire"
)

// With a tracer provider, an instance started with a traceparent header
// is a span of the client's trace, and an HTTP agent's call carries its
// run's span.
func TestServer_Traces_JoinTheClientsTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	f := newFixture(t, func(c *server.Config) { c.TracerProvider = tp })
	const client = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req, err := http.NewRequest("POST", f.http.URL+"/v1/workflows/review/instances", bytes.NewReader([]byte(`{"id": "tr-1", "input": {"approve": true}}`)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", client)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 201, resp.StatusCode)
	f.waitStatus("tr-1", "completed")

	var flow, writer tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "invoke_workflow review":
			flow = s
		case "invoke_agent writer":
			writer = s
		}
	}
	require.True(t, flow.SpanContext.IsValid(), "no instance span")
	assert.Equal(t, "0af7651916cd43dd8448eb211c80319c", flow.SpanContext.TraceID().String())
	assert.Equal(t, "b7ad6b7169203331", flow.Parent.SpanID().String())
	require.True(t, writer.SpanContext.IsValid(), "no span of the writer's run")
	assert.Equal(t, flow.SpanContext.SpanID(), writer.Parent.SpanID())
	f.agents.mu.Lock()
	got := f.agents.traces["writer"]
	f.agents.mu.Unlock()
	assert.Equal(t, wire.FormatTraceparent(writer.SpanContext), got, "the HTTP agent's call carries its run's span")
}
