package yamlerr_test

import (
	"bytes"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/internal/yamlerr"
)

func locate(t *testing.T, src string) yamlerr.Problem {
	t.Helper()
	var n yaml.Node
	err := yamlerr.Unmarshal([]byte(src), &n)
	if err == nil {
		t.Fatalf("got no error for\n%s", src)
	}
	return yamlerr.Locate([]byte(src), err)
}

func TestLocate_TheOffendingLine(t *testing.T) {
	// Each case puts the mistake many lines below the block it breaks, where
	// the parser alone would point.
	block := "a:\n" + strings.Repeat("  k: v\n", 20)
	tests := []struct {
		name      string
		src       string
		line, col int
		plain     string
	}{
		{"indentation one short", block + " b: 1\n", 22, 2, "indentation of this line does not fit"},
		{"dash missing", "l:\n  - x\n  - y\n  z: 1\n", 4, 3, "indentation of this line does not fit"},
		{"tab", block + "\tb: 1\n", 22, 1, "a tab indents this line"},
		{"stray colon", block + "  b: one: two\n", 22, 9, "a stray ':'"},
		{"indented under a value", "a: 1\n  b: 2\n", 2, 3, "indented under a key that already has a value"},
		{"unclosed flow", "a: {b: 1\nc: 2\n", 1, 1, "a '{' opened on this line is not closed"},
		{"unclosed double quote", block + "  b: \"open\n  c: 1\n  d: 2\n", 22, 6, "a quoted string that starts here is not closed"},
		{"unclosed quote swallowing a later one", block + "  b: \"open\n  c: '\"x'\n", 22, 6, "a quoted value opened on this line is not closed"},
		{"optional type in a flow mapping", "a: 1\ninput: {id: string, note: string?}\n", 2, 33, "a value that ends in '?' inside { } must be in quotes"},
		{"unclosed list", "a: 1\nb: [1, 2\nc: 3\n", 2, 1, "a '[' opened on this line is not closed"},
		{"unclosed quote at the end", "a: 1\nb: 'open\n", 2, 4, "a quoted string that starts here is not closed"},
		{"unknown anchor", "a: 1\nb: *nope\n", 2, 4, "the alias *nope names no anchor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := locate(t, tt.src)
			if p.Line != tt.line || p.Col != tt.col {
				t.Errorf("got %d:%d, want %d:%d (%s)", p.Line, p.Col, tt.line, tt.col, p.Message())
			}
			if !strings.Contains(p.Plain, tt.plain) {
				t.Errorf("got %q, want it to contain %q", p.Plain, tt.plain)
			}
			if !strings.HasSuffix(p.Message(), "(parser: "+p.Parser+")") || !strings.HasPrefix(p.Message(), "malformed yaml: "+p.Plain) {
				t.Errorf("got %q, want plain words first, then the parser's text", p.Message())
			}
		})
	}
}

func TestUnmarshal_NeverPanics(t *testing.T) {
	var n yaml.Node
	_ = yamlerr.Unmarshal([]byte("a: "+strings.Repeat("[", 20000)), &n)
}

// FuzzLocate: whatever the input, a parse error is placed on one of the
// file's lines, at a column of at least 1, with words for it.
func FuzzLocate(f *testing.F) {
	for _, s := range []string{"a:\n  b: 1\n c: 2\n", "a: [1, 2\n", "a: 'x\n", "a:\n\tb: 1\n", "a: b: c\n", "- a\nb: 1\n", "a: *x\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		var n yaml.Node
		err := yamlerr.Unmarshal(src, &n)
		if err == nil {
			return
		}
		p := yamlerr.Locate(src, err)
		lines := bytes.Count(src, []byte("\n")) + 1
		if p.Line < 1 || p.Line > lines || p.Col < 1 {
			t.Fatalf("got %d:%d for a file of %d lines: %s", p.Line, p.Col, lines, p.Message())
		}
		if p.Plain == "" || p.Parser == "" {
			t.Fatalf("got %q, want plain words and the parser's text", p.Message())
		}
	})
}
