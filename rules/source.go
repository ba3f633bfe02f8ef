package rules

import (
	"bytes"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// source maps positions inside YAML scalars back to the file, so that an
// expression error points at its column and not at the scalar's start.
type source struct {
	lines [][]byte
}

func newSource(src []byte) *source {
	return &source{lines: bytes.Split(src, []byte("\n"))}
}

func posOf(n *yaml.Node) Pos {
	p := Pos{Line: n.Line, Col: n.Column}
	if p.Line < 1 {
		p.Line = 1
	}
	if p.Col < 1 {
		p.Col = 1
	}
	return p
}

// line returns the 1-based line i, or nil.
func (s *source) line(i int) []byte {
	if i < 1 || i > len(s.lines) {
		return nil
	}
	return bytes.TrimSuffix(s.lines[i-1], []byte("\r"))
}

// exprPos returns the file position of the rune at offset off of the value
// of scalar n. It follows the scalar's style: quotes, escapes and folded
// line breaks. Where the text cannot be followed (a hand-edited tab, an
// alias), it falls back to the scalar's own position.
func (s *source) exprPos(n *yaml.Node, off int) Pos {
	start := posOf(n)
	if off <= 0 && n.Style != yaml.LiteralStyle && n.Style != yaml.FoldedStyle {
		if n.Style == yaml.SingleQuotedStyle || n.Style == yaml.DoubleQuotedStyle {
			start.Col++
		}
		return start
	}
	var p Pos
	var ok bool
	switch n.Style {
	case yaml.LiteralStyle, yaml.FoldedStyle:
		p, ok = s.blockPos(start.Line, off)
	case yaml.SingleQuotedStyle:
		p, ok = s.flowPos(start.Line, start.Col+1, off, '\'')
	case yaml.DoubleQuotedStyle:
		p, ok = s.flowPos(start.Line, start.Col+1, off, '"')
	default:
		p, ok = s.flowPos(start.Line, start.Col, off, 0)
	}
	if !ok {
		return start
	}
	return p
}

// blockPos walks a literal or folded block scalar whose indicator is on
// line hdr. Each content line contributes its runes plus one for the break.
func (s *source) blockPos(hdr, off int) (Pos, bool) {
	indent := -1
	for i := hdr + 1; i <= len(s.lines); i++ {
		ln := s.line(i)
		if len(bytes.TrimSpace(ln)) == 0 {
			if indent < 0 {
				off-- // a leading empty line is a break in the value
				continue
			}
			if off <= 0 {
				return Pos{Line: i, Col: indent + 1}, true
			}
			off--
			continue
		}
		if indent < 0 {
			indent = len(ln) - len(bytes.TrimLeft(ln, " "))
		}
		lead := len(ln) - len(bytes.TrimLeft(ln, " "))
		if lead < indent {
			return Pos{}, false // the block ended before the offset
		}
		text := ln[indent:]
		n := utf8.RuneCount(text)
		if off <= n {
			return Pos{Line: i, Col: indent + 1 + off}, true
		}
		off -= n + 1
	}
	return Pos{}, false
}

// flowPos walks a plain (quote == 0) or quoted flow scalar starting at
// line, col, counting decoded runes until off.
func (s *source) flowPos(line, col, off int, quote byte) (Pos, bool) {
	ln := s.line(line)
	i := byteOffset(ln, col-1)
	if i > len(ln) {
		return Pos{}, false
	}
	at := func(line int, ln []byte, i int) Pos {
		return Pos{Line: line, Col: utf8.RuneCount(ln[:min(i, len(ln))]) + 1 + max(0, i-len(ln))}
	}
	for {
		for i < len(ln) {
			if off == 0 {
				return at(line, ln, i), true
			}
			c := ln[i]
			switch {
			case quote == '\'' && c == '\'' && i+1 < len(ln) && ln[i+1] == '\'':
				i += 2
			case quote == '"' && c == '\\' && i+1 < len(ln):
				i += escapeLen(ln[i+1])
			case c == quote && quote != 0:
				return at(line, ln, i), true // closing quote
			default:
				_, size := utf8.DecodeRune(ln[i:])
				i += size
			}
			off--
		}
		if off == 0 {
			return at(line, ln, i), true
		}
		// A line break inside a flow scalar folds into one space.
		line++
		ln = s.line(line)
		if ln == nil {
			return Pos{}, false
		}
		i = len(ln) - len(bytes.TrimLeft(ln, " \t"))
		off--
	}
}

// escapeLen is the length in bytes of a double-quoted escape starting with
// a backslash followed by c.
func escapeLen(c byte) int {
	switch c {
	case 'x':
		return 4
	case 'u':
		return 6
	case 'U':
		return 10
	}
	return 2
}

// byteOffset returns the byte offset of rune n in b, counting runes past the
// end as one byte each.
func byteOffset(b []byte, n int) int {
	i := 0
	for n > 0 && i < len(b) {
		_, size := utf8.DecodeRune(b[i:])
		i += size
		n--
	}
	return i + n
}
