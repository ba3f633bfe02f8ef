package jsonv

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped as encoding/json
// escapes it: HTML's <, > and &, U+2028 and U+2029, control characters,
// and each byte of invalid UTF-8 as U+FFFD.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendFloat appends f as encoding/json writes a float64; ok is false
// for NaN and the infinities, which JSON cannot hold.
func AppendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// Append appends v's JSON as json.Marshal writes it: map keys sorted,
// strings escaped as AppendString does. Values of types other than those
// decoded JSON holds (and a few common ones) are written by json.Marshal
// itself, and its error is returned as it gives it.
func Append(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return AppendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case float64:
		if out, ok := AppendFloat(b, x); ok {
			return out, nil
		}
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case map[string]any:
		if x == nil {
			return append(b, "null"...), nil
		}
		return appendMap(b, x)
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = Append(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, data...), nil
}

// appendMap writes m with its keys in order. The entries are taken with
// their values and sorted by key, by insertion for the few entries of a
// message's maps: looking each value up again by its key was most of the
// cost of writing a map.
func appendMap(b []byte, m map[string]any) ([]byte, error) {
	var (
		entries []entry
		small   [16]entry
	)
	if len(m) <= len(small) {
		// Stored and sorted in the array by name, not through a slice:
		// the compiler then knows the stores are to the stack and writes
		// no write barriers, whose flushes while the collector runs were
		// a third of the time of writing a work message.
		n := 0
		for k, v := range m {
			if n == len(small) {
				n = -1 // m grew while ranged (a caller's race): sort it below
				break
			}
			small[n] = entry{k, v}
			n++
		}
		for i := 1; i < n; i++ {
			for j := i; j > 0 && small[j].key < small[j-1].key; j-- {
				small[j], small[j-1] = small[j-1], small[j]
			}
		}
		if n >= 0 {
			entries = small[:n]
		}
	}
	if entries == nil {
		entries = make([]entry, 0, len(m))
		for k, v := range m {
			entries = append(entries, entry{k, v})
		}
		slices.SortFunc(entries, func(x, y entry) int { return strings.Compare(x.key, y.key) })
	}
	b = append(b, '{')
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, e.key)
		b = append(b, ':')
		var err error
		if b, err = Append(b, e.value); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}
