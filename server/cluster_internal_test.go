package server

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeCall: a call forwarded by another server decodes or is
// refused with a 400 naming a field, and never panics; what decodes is a
// call for the instance it was sent for, with what its operation needs.
func FuzzDecodeCall(f *testing.F) {
	for _, seed := range []string{
		`{"op":"start","id":"i","workflow":"trip","input":{"a":1}}`,
		`{"op":"signal","id":"i","name":"approved","data":{"by":"ana"}}`,
		`{"op":"select","id":"i","agent":"boss"}`,
		`{"op":"cancel","id":"i"}`,
		`{"op":"start","id":"other","workflow":"trip"}`,
		`{"op":"reboot","id":"i"}`,
		`{"op":"signal","id":"i"}`,
		`{"op":`, `null`, `[]`, ``,
	} {
		f.Add([]byte(seed), "i")
	}
	f.Fuzz(func(t *testing.T, data []byte, id string) {
		c, e := decodeCall(data, id)
		if e != nil {
			if e.Status != 400 || e.Field == "" {
				t.Fatalf("refusal %+v: want a 400 naming a field", e)
			}
			return
		}
		if c.ID != id {
			t.Fatalf("decoded a call for %q, sent for %q", c.ID, id)
		}
		ok := map[string]bool{opStart: c.Workflow != "", opSignal: c.Name != "", opSelect: c.Agent != "", opCancel: true}
		if !ok[c.Op] {
			t.Fatalf("decoded %+v: an operation without what it needs", c)
		}
		if _, err := json.Marshal(c); err != nil {
			t.Fatalf("a decoded call does not encode again: %v", err)
		}
	})
}
