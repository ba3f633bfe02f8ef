package natsstore

import (
	"testing"
)

// FuzzDecode: no bytes a message may hold make the decoders panic.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"format":1,"snapshot":{"id":"i","visits":{"A":1}},"entries":[{"seq":1,"kind":"started"}],"outbox":[{"key":"k"}]}`))
	f.Add([]byte(`{"format":1,"dead_letter":{"seq":1,"at":"2025-01-01T00:00:00Z"}}`))
	f.Add([]byte(`{"format":1,"workflow":{"hash":"i","source":"AAE="}}`))
	f.Add([]byte("\x00\xff{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = decodeStep("i", data)
		_, _ = decodeDead(data)
		_, _ = decodeWorkflow("i", data)
		_, _ = untoken(string(data))
	})
}

func TestToken_RoundTrip(t *testing.T) {
	for _, id := range []string{"a", "a\x00", "é", "a b", "a/b", "a.b", "*", ">", "0f8fad5b-d9cb-469f-a165-70867728950e"} {
		tok := token(id)
		for _, c := range tok {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				t.Fatalf("token of %q is %q: %q is not a subject token character", id, tok, c)
			}
		}
		got, err := untoken(tok)
		if err != nil || got != id {
			t.Fatalf("untoken(token(%q)) = %q, %v", id, got, err)
		}
	}
}
