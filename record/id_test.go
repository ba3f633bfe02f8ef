package record_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/batonhq/baton/record"
)

// FuzzCheckID: CheckID passes exactly the ids its rules allow, and refuses
// the others with an *IDError matching ErrInvalidID.
func FuzzCheckID(f *testing.F) {
	for _, seed := range []string{"order-7", "", ".", "..", "...", "a\x00", "a\u0085", "\xff", "é", "a/b/KYC/1", strings.Repeat("x", record.MaxIDLen+1)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		want := id != "" && len(id) <= record.MaxIDLen && utf8.ValidString(id) &&
			!strings.ContainsFunc(id, unicode.IsControl) && id != "." && id != ".."
		err := record.CheckID(id)
		if (err == nil) != want {
			t.Fatalf("CheckID(%q) = %v, want allowed %v", id, err, want)
		}
		var ie *record.IDError
		if err != nil && (!errors.As(err, &ie) || !errors.Is(err, record.ErrInvalidID) || ie.ID != id || ie.Reason == "") {
			t.Fatalf("CheckID(%q) = %#v, want an *IDError with its reason", id, err)
		}
	})
}

func TestCheckID_TheLongestIDAndTheMessage(t *testing.T) {
	if err := record.CheckID(strings.Repeat("é", record.MaxIDLen/2)); err != nil {
		t.Fatalf("an id of exactly %d bytes: %v", record.MaxIDLen, err)
	}
	err := record.CheckID(strings.Repeat("x", 3000))
	if err == nil || len(err.Error()) > 200 || !strings.Contains(err.Error(), "3000 bytes") {
		t.Fatalf("got %q, want a short message giving the length", err)
	}
}
