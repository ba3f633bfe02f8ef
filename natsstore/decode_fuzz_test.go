package natsstore

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/record"
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
		_, _, _ = untoken(string(data))
	})
}

func TestToken_RoundTrip(t *testing.T) {
	longest := strings.Repeat("é", record.MaxIDLen/2)
	for _, id := range []string{"a", "a\x00", "é", "a b", "a/b", "a.b", "*", ">", "0f8fad5b-d9cb-469f-a165-70867728950e", longest} {
		tok := token(id)
		for _, c := range tok {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				t.Fatalf("token of %q is %q: %q is not a subject token character", id, tok, c)
			}
		}
		got, hashed, err := untoken(tok)
		if err != nil || hashed || got != id {
			t.Fatalf("untoken(token(%q)) = %q, %v, %v", id, got, hashed, err)
		}
	}
}

// An id longer than record.MaxIDLen has a short token of its own, however
// long the id, which untoken tells from an encoded id.
func TestToken_LongIDsAreHashed(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{
		strings.Repeat("x", record.MaxIDLen+1),
		strings.Repeat("x", record.MaxIDLen+2),
		strings.Repeat("x", 3000),
		strings.Repeat("é", record.MaxIDLen) + "/CHILD/1",
		strings.Repeat("x", 1<<20),
	} {
		tok := token(id)
		if len(tok) > 64 {
			t.Fatalf("token of a %d-byte id is %d bytes, want at most 64", len(id), len(tok))
		}
		if other, ok := seen[tok]; ok {
			t.Fatalf("ids of %d and %d bytes share token %q", len(id), len(other), tok)
		}
		seen[tok] = id
		if _, hashed, err := untoken(tok); err != nil || !hashed {
			t.Fatalf("untoken(%q): hashed %v, %v; want a hashed token", tok, hashed, err)
		}
	}
}
