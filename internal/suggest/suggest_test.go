package suggest_test

import (
	"testing"

	"github.com/batonhq/baton/internal/suggest"
)

func TestSuggest(t *testing.T) {
	cands := []string{"next", "from", "trigger", "priority", "REVIEWING", "REFUNDING", "seller", "high"}
	tests := []struct{ name, want string }{
		{"nxt", "next"},
		{"form", "from"},
		{"trigegr", "trigger"},
		{"prority", "priority"},
		{"REVIEWNG", "REVIEWING"},
		{"REFUNDNG", "REFUNDING"},
		{"seler", "seller"},
		{"HIGH", "high"},
		{"hihg", "high"},
		{"next", ""},           // an exact match is not a suggestion
		{"x", ""},              // too far from everything
		{"sellerrr", "seller"}, // two edits on a long name are a typo
		{"sellerrrr", ""},      // three are not
		{"REVIEWINGXXX", ""},
	}
	for _, tt := range tests {
		if got := suggest.Nearest(tt.name, cands); got != tt.want {
			t.Errorf("Nearest(%q): got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b  string
		limit int
		want  int
	}{
		{"abc", "abc", 2, 0},
		{"abc", "acb", 2, 1},
		{"abcd", "badc", 2, 2},
		{"kitten", "sitting", 3, 3},
		{"kitten", "sitting", 2, 3},
		{"abcdef", "ghijkl", 2, 3},
		{"ab", "ba", 1, 1},
		{"abcdefgh", "bacdefhg", 2, 2},
	}
	for _, tt := range tests {
		if got := suggest.Distance(tt.a, tt.b, tt.limit); got != tt.want {
			t.Errorf("Distance(%q, %q, %d): got %d, want %d", tt.a, tt.b, tt.limit, got, tt.want)
		}
	}
}
