package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkServerStart is instances started per second through the API on
// loopback: each a POST answered 201 once its first step is committed to
// the store (the embedded NATS server, every write synced), its agents
// HTTP agents on loopback.
func BenchmarkServerStart(b *testing.B) {
	f := newFixture(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	url := f.http.URL + "/v1/workflows/review/instances"
	b.ReportAllocs()
	b.SetParallelism(4)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(url, "application/json", strings.NewReader(`{"input":{"approve":true}}`))
			if err != nil {
				b.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "starts/s")
}
