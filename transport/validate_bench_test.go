package transport_test

import "testing"

// BenchmarkMessageValidate validates the message every bus send checks: a
// REQUEST with a small nested content map. It must not allocate.
func BenchmarkMessageValidate(b *testing.B) {
	m := validMessage()
	m.Metadata = map[string]any{"workflow": "refund", "step": 3}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}
