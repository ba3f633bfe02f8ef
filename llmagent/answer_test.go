package llmagent

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeAnswer: whatever a model answers, decoding never panics; an
// accepted answer names one of the triggers and has a non-nil result that
// survives JSON; a refused one quotes at most the start of the answer.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"trigger": "refund", "result": {"category": "shipping", "score": 3}}`,
		`{"trigger": "refund", "result": null}`,
		`{"trigger": "refund"}`,
		`{"trigger": "dance", "result": {}}`,
		`{"trigger": "refund", "result": {}, "extra": 1}`,
		`{"trigger": "refund", "result": {}} {}`,
		`{"trigger": 3, "result": {}}`,
		`{"result": {}}`,
		`Sure! {"trigger": "refund"}`,
		"```json\n{\"trigger\": \"refund\", \"result\": {}}\n```",
		`[]`, `null`, ``, `{"trigger": "", "result": "x"}`,
		strings.Repeat("é", 300),
	} {
		f.Add(s)
	}
	triggers := []string{"refund", "escalate"}
	f.Fuzz(func(t *testing.T, text string) {
		trigger, result, bad := decodeAnswer(text, triggers)
		if bad != nil {
			if len(bad.Answer) > maxQuoted+3 || (utf8.ValidString(text) && !utf8.ValidString(bad.Answer)) {
				t.Fatalf("got quoted answer of %d bytes (%q), want at most the start of the answer", len(bad.Answer), bad.Answer)
			}
			if bad.Error() == "" {
				t.Fatal("got an empty error message")
			}
			return
		}
		if !slices.Contains(triggers, trigger) {
			t.Fatalf("accepted trigger %q, want one of %v", trigger, triggers)
		}
		if result == nil {
			t.Fatal("got a nil result, want an empty map at least")
		}
		if _, err := json.Marshal(result); err != nil {
			t.Fatalf("result does not survive JSON: %v", err)
		}
	})
}

func TestDecodeAnswer(t *testing.T) {
	for _, tt := range []struct {
		text, trigger, reason string
	}{
		{`{"trigger": "refund", "result": {"a": 1}}`, "refund", ""},
		{` {"trigger": "refund", "result": null} `, "refund", ""},
		{`{"trigger": "refund", "result": {}, "why": "x"}`, "", "not a JSON object"},
		{`{"trigger": "refund", "result": {}}{}`, "", "more than one"},
		{`{"result": {}}`, "", "no trigger"},
		{`{"trigger": "refund", "result": "yes"}`, "", "not an object"},
	} {
		got, _, bad := decodeAnswer(tt.text, []string{"refund"})
		switch {
		case tt.reason == "" && (bad != nil || got != tt.trigger):
			t.Errorf("%s: got %q, %v, want %q", tt.text, got, bad, tt.trigger)
		case tt.reason != "" && (bad == nil || !strings.Contains(bad.Error(), tt.reason)):
			t.Errorf("%s: got %v, want an error saying %q", tt.text, bad, tt.reason)
		}
	}
}
