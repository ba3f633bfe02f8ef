package jsonv_test

import (
	"testing"

	"github.com/batonhq/baton/internal/jsonv"
)

// workMetadata is a work message's metadata, as the wire codec writes it.
var workMetadata = map[string]any{
	"ack_wait": 30.0, "attempt": 1, "deadline": "2026-11-27T16:17:14.149216883Z", "handoff_id": "",
	"idempotency_key": "01a21dcb-0545-729a-be61-bd268dbd8959:1", "instance_id": "01a21dcb-0545-729a-be61-bd268dbd8959",
	"state": "VALIDATING", "step": 1, "traceparent": "00-0b219fd653add0bdec9f9709aabb479f-d3189e730704f1f2-01",
	"version": 1, "workflow": "refund",
}

// BenchmarkAppend_Map writes a work message's metadata.
func BenchmarkAppend_Map(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 1024)
	for b.Loop() {
		var err error
		if buf, err = jsonv.Append(buf[:0], workMetadata); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecoder_Map reads it back.
func BenchmarkDecoder_Map(b *testing.B) {
	data, err := jsonv.Append(nil, workMetadata)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		d := jsonv.NewDecoder(data)
		d.Map()
		if d.End(); !d.OK() {
			b.Fatal("not decoded")
		}
	}
}

// BenchmarkDecoder_Keys reads an object of the work's metadata keys, with
// values that make nothing, on every core at once: the cost of looking
// keys up in the shared table.
func BenchmarkDecoder_Keys(b *testing.B) {
	data := []byte(`{"ack_wait":1,"attempt":1,"deadline":1,"handoff_id":1,"idempotency_key":1,"instance_id":1,"state":1,` +
		`"step":1,"traceparent":1,"version":1,"workflow":1,"action":1,"task":1,"input":1,"context":1,"reason":1}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			d := jsonv.NewDecoder(data)
			d.Object(func(string) { d.Int() })
			if d.End(); !d.OK() {
				b.Fatal("not decoded")
			}
		}
	})
}
