// Package yamlerr turns a YAML parser error into a position and a message a
// person can act on, for the workflow and scenario loaders.
//
// The parser names the line where the enclosing block starts, not the line
// that breaks it: a bad indentation on line 36 is reported at 31. Locate
// finds the offending line itself: the shortest prefix of the file that
// already fails with the same error ends on it.
package yamlerr

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Problem is a malformed YAML document, positioned at the offending token.
type Problem struct {
	Line, Col int    // 1-based; Col is 1 when the parser does not tell it
	Plain     string // what is wrong, in plain words
	Parser    string // the parser's own text, without "yaml: line N:"
}

// Message renders the plain words, then the parser's text.
func (p Problem) Message() string {
	return fmt.Sprintf("malformed yaml: %s (parser: %s)", p.Plain, p.Parser)
}

var (
	lineRe        = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)
	unknownAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
	optionalMark  = regexp.MustCompile(`[\w\]]\?\s*[,}]`)
)

// Unmarshal parses src into a node tree; a panic of the parser becomes an
// error, so that loading never panics.
func Unmarshal(src []byte, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return yaml.Unmarshal(src, n)
}

// Locate explains err, the error Unmarshal returned for src.
func Locate(src []byte, err error) Problem {
	text, line := split(err)
	lines := bytes.Split(src, []byte("\n"))
	p := Problem{Line: max(line, 1), Col: 1, Parser: text}
	if m := unknownAnchor.FindStringSubmatch(text); m != nil {
		p.Line, p.Col = find(lines, "*"+m[1])
		p.Plain = fmt.Sprintf("the alias *%s names no anchor &%s above it", m[1], m[1])
		return p
	}
	switch {
	case strings.HasPrefix(text, "did not find expected ',' or"):
		// An unclosed flow collection is reported where it opens: the
		// parser names that line (from 0), unless it is the first.
		p.Line = unclosedFlow(lines, min(line+1, len(lines)), text[len(text)-2])
	case strings.HasPrefix(text, "found unexpected end of stream"):
		// The parser names the end of the file; the quote opened earlier.
		p.Line = firstFailing(lines, 1, text)
	case line > 0:
		p.Line = firstFailing(lines, max(line-1, 1), text)
	}
	if q := unclosedQuote(lines, max(line-1, 1), p.Line, text); q > 0 {
		p.Line = q
		ln := lineAt(lines, q)
		p.Col = utf8.RuneCount(ln[:bytes.IndexByte(ln, openQuote(ln))]) + 1
		p.Plain = "a quoted value opened on this line is not closed; its text runs on to where the parser gave up"
		return p
	}
	ln := lineAt(lines, p.Line)
	indent := len(ln) - len(bytes.TrimLeft(ln, " "))
	switch {
	case strings.Contains(text, "tab character") || (strings.HasPrefix(text, "found character that cannot start any token") && bytes.HasPrefix(ln[indent:], []byte("\t"))):
		p.Plain = "a tab indents this line; YAML indents with spaces only"
		if i := bytes.IndexByte(ln, '\t'); i >= 0 {
			p.Col = utf8.RuneCount(ln[:i]) + 1
		}
	case strings.HasPrefix(text, "found character that cannot start any token"):
		p.Plain = "a value cannot start with this character (` @ or a tab); put the value in quotes"
		p.Col = indent + 1
	case text == "did not find expected key" || text == "did not find expected '-' indicator":
		p.Plain = "the indentation of this line does not fit the block above it; indent it like its siblings"
		p.Col = indent + 1
	case strings.HasPrefix(text, "mapping values are not allowed") && prevIndent(lines, p.Line) >= 0 && indent > prevIndent(lines, p.Line):
		p.Plain = "this line is indented under a key that already has a value; indent it like its siblings, or quote a value that holds ': '"
		p.Col = indent + 1
	case strings.HasPrefix(text, "mapping values are not allowed"):
		p.Plain = "a stray ':' here; a value that holds ': ' must be in quotes"
		p.Col = strayColon(lines, p.Line, text)
	case strings.HasPrefix(text, "did not find expected ',' or '}'") && optionalMark.Match(ln):
		// `{note: string?}`: the parser takes the ? before , or } for an
		// indicator, however plain the type of an optional field reads.
		p.Plain = "a value that ends in '?' inside { } must be in quotes ('string?'), or its mapping written one key per line"
		p.Col = utf8.RuneCount(ln[:optionalMark.FindIndex(ln)[0]+1]) + 1
	case strings.HasPrefix(text, "did not find expected ',' or '}'"):
		p.Plain = "a '{' opened on this line is not closed, or two of its entries lack a ',' between them"
	case strings.HasPrefix(text, "did not find expected ',' or ']'"):
		p.Plain = "a '[' opened on this line is not closed, or two of its items lack a ',' between them"
	case strings.HasPrefix(text, "found unexpected end of stream"):
		p.Plain = "a quoted string that starts here is not closed"
		if q := openQuote(ln); q != 0 {
			p.Col = utf8.RuneCount(ln[:bytes.IndexByte(ln, q)]) + 1
		}
	case strings.HasPrefix(text, "could not find expected ':'"):
		p.Plain = "a key on this line has no ':' after it"
	case strings.HasPrefix(text, "did not find expected node content"):
		p.Plain = "a value is missing here"
		p.Col = indent + 1
	case strings.Contains(text, "exceeded max depth"):
		p.Plain = "the document is nested too deeply"
	default:
		p.Plain = "this is not valid YAML"
	}
	return p
}

// split returns the parser's text (its first line) and the line it names,
// or 0. The parser proper counts lines from 0, its scanner from 1; either
// way the name is only a lower bound for firstFailing.
func split(err error) (string, int) {
	msg := err.Error()
	line := 0
	if m := lineRe.FindStringSubmatch(msg); m != nil {
		msg = msg[len(m[0]):]
		if n, convErr := strconv.Atoi(m[1]); convErr == nil {
			line = n
		}
	}
	if first, _, cut := strings.Cut(msg, "\n"); cut {
		msg = first
	}
	return msg, line
}

// firstFailing returns the smallest k >= from such that the first k lines
// already fail with the parser text want: the line that breaks the
// document. It bisects, so it parses O(log n) prefixes; when the prefixes do
// not fail in order it still returns a line where failing starts, and from
// when none fails.
func firstFailing(lines [][]byte, from int, want string) int {
	fails := func(k int) bool {
		var n yaml.Node
		err := Unmarshal(bytes.Join(lines[:k], []byte("\n")), &n)
		if err == nil {
			return false
		}
		text, _ := split(err)
		return text == want
	}
	lo, hi := min(from, len(lines)), len(lines)
	if lo < 1 || !fails(hi) {
		return max(from, 1)
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// strayColon returns the column of the first ':' on line whose cut makes
// the document fail with text, or 1.
func strayColon(lines [][]byte, line int, text string) int {
	ln := lineAt(lines, line)
	head := bytes.Join(lines[:line-1], []byte("\n"))
	for i := 0; i < len(ln); i++ {
		if ln[i] != ':' {
			continue
		}
		doc := append(append(bytes.Clone(head), '\n'), ln[:i+1]...)
		doc = append(doc, ' ', 'x')
		var n yaml.Node
		if err := Unmarshal(doc, &n); err != nil {
			if got, _ := split(err); got == text {
				return utf8.RuneCount(ln[:i]) + 1
			}
		}
	}
	return 1
}

// unclosedQuote returns the nearest line in [from, to] that opens a quoted
// value without closing it, when closing it there lets the document parse
// (or fail further on): the quote swallowed the lines up to the error.
func unclosedQuote(lines [][]byte, from, to int, text string) int {
	if strings.HasPrefix(text, "found unexpected end of stream") {
		return 0 // already reported where the quote opens
	}
	for i := min(to, len(lines)); i >= from && i >= 1; i-- {
		ln := lineAt(lines, i)
		q := openQuote(ln)
		if q == 0 {
			continue
		}
		fixed := slices.Clone(lines)
		fixed[i-1] = append(bytes.Clone(ln), q)
		var n yaml.Node
		err := Unmarshal(bytes.Join(fixed, []byte("\n")), &n)
		if err == nil {
			return i
		}
		if _, l := split(err); l > to {
			return i
		}
		return 0
	}
	return 0
}

// openQuote returns the quote character of a value that opens on ln
// (after "key: " or "- ") and does not close on it, or 0.
func openQuote(ln []byte) byte {
	t := bytes.TrimLeft(ln, " ")
	t = bytes.TrimPrefix(t, []byte("- "))
	if i := bytes.Index(t, []byte(": ")); i >= 0 {
		t = t[i+2:]
	}
	t = bytes.TrimLeft(t, " ")
	if len(t) == 0 || (t[0] != '"' && t[0] != '\'') {
		return 0
	}
	q := t[0]
	for i := 1; i < len(t); i++ {
		switch {
		case q == '"' && t[i] == '\\':
			i++
		case q == '\'' && t[i] == '\'' && i+1 < len(t) && t[i+1] == '\'':
			i++
		case t[i] == q:
			return 0
		}
	}
	return q
}

// unclosedFlow returns the nearest line at or before upto that opens more
// flow collections (closing with closer, '}' or ']') than it closes, or upto.
func unclosedFlow(lines [][]byte, upto int, closer byte) int {
	opener := byte('{')
	if closer == ']' {
		opener = '['
	}
	for i := upto; i >= 1; i-- {
		depth := 0
		var quote byte
	scan:
		for _, c := range lineAt(lines, i) {
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '#':
				break scan // a comment
			case c == opener:
				depth++
			case c == closer:
				depth--
			}
		}
		if depth > 0 {
			return i
		}
	}
	return max(upto, 1)
}

// prevIndent returns the indentation of the last non-blank, non-comment
// line before line, or -1.
func prevIndent(lines [][]byte, line int) int {
	for i := line - 1; i >= 1; i-- {
		ln := lineAt(lines, i)
		t := bytes.TrimLeft(ln, " ")
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		return len(ln) - len(t)
	}
	return -1
}

func lineAt(lines [][]byte, i int) []byte {
	if i < 1 || i > len(lines) {
		return nil
	}
	return bytes.TrimSuffix(lines[i-1], []byte("\r"))
}

func find(lines [][]byte, text string) (int, int) {
	for i, ln := range lines {
		if j := bytes.Index(ln, []byte(text)); j >= 0 {
			return i + 1, utf8.RuneCount(ln[:j]) + 1
		}
	}
	return 1, 1
}
