package jsonvalue_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/jsonvalue"
)

// utf8Cases put a byte outside ASCII, valid or not, at every place the
// word tests of ValidUTF8 look at: each length from 0 to 24, the bad byte
// first, last and in between.
func utf8Cases() []string {
	var out []string
	for n := 0; n <= 24; n++ {
		ascii := strings.Repeat("a", n)
		out = append(out, ascii)
		for i := 0; i < n; i++ {
			for _, bad := range []string{"\xff", "\x80", "é", "\xc3", "漢", "\U0001F600", "\xed\xa0\x80"} {
				s := ascii[:i] + bad + ascii[i:]
				out = append(out, s, s[:len(s)-1])
			}
		}
	}
	return out
}

func TestValidUTF8_MatchesValidString(t *testing.T) {
	for _, s := range utf8Cases() {
		if got, want := jsonvalue.ValidUTF8(s), utf8.ValidString(s); got != want {
			t.Errorf("ValidUTF8(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzValidUTF8(f *testing.F) {
	for _, s := range utf8Cases() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := jsonvalue.ValidUTF8(s), utf8.ValidString(s); got != want {
			t.Errorf("ValidUTF8(%q) = %v, want %v", s, got, want)
		}
	})
}

// BenchmarkValidUTF8 checks the strings of the message a bus send checks
// (BenchmarkSendReceive's): its ids, agents, content keys and values.
func BenchmarkValidUTF8(b *testing.B) {
	strs := []string{"00000000-0000-4000-8000-000000000000", "", "", "", "FlightAgent", "PaymentAgent", "",
		"action", "process_payment", "parameters", "amount"}
	b.Run("ValidUTF8", func(b *testing.B) {
		for b.Loop() {
			for _, s := range strs {
				if !jsonvalue.ValidUTF8(s) {
					b.Fatal(s)
				}
			}
		}
	})
	b.Run("utf8.ValidString", func(b *testing.B) {
		for b.Loop() {
			for _, s := range strs {
				if !utf8.ValidString(s) {
					b.Fatal(s)
				}
			}
		}
	})
}
