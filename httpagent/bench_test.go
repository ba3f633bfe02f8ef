package httpagent_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/batonhq/baton/httpagent"
)

// BenchmarkHTTPAgent is one step's round trip to an HTTP agent on loopback:
// the work encoded, signed and POSTed, the agent's 200 report read back.
func BenchmarkHTTPAgent(b *testing.B) {
	report := []byte(`{"instance_id":"i-1","step":3,"agent":"seller","trigger":"reviewed","result":{"approval":"APPROVED"}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(report)
	}))
	defer srv.Close()
	a, err := httpagent.New(srv.URL, httpagent.WithSecret([]byte("bench")))
	if err != nil {
		b.Fatal(err)
	}
	tk := task()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Handle(ctx, tk); err != nil {
			b.Fatal(err)
		}
	}
}
