package handoff

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// maxSizeDepth bounds the nesting JSONSize walks; a deeper value (or a
// cycle) is measured as unknown rather than followed.
const maxSizeDepth = 256

// JSONSize returns the length in bytes of json.Marshal(v) without building
// the encoding for the JSON-like types a context is made of (maps, slices,
// strings, numbers, booleans), so that measuring a hand-off's context costs
// no allocation. Other types are marshalled. It returns -1 when v cannot be
// encoded.
func JSONSize(v any) int {
	n, ok := sizeOf(v, 0)
	if !ok {
		return -1
	}
	return n
}

func sizeOf(v any, depth int) (int, bool) {
	if depth > maxSizeDepth {
		return 0, false
	}
	switch x := v.(type) {
	case nil:
		return 4, true
	case string:
		return stringSize(x), true
	case bool:
		if x {
			return 4, true
		}
		return 5, true
	case float64:
		return floatSize(x, 64)
	case float32:
		return floatSize(float64(x), 32)
	case int:
		return intSize(int64(x)), true
	case int8:
		return intSize(int64(x)), true
	case int16:
		return intSize(int64(x)), true
	case int32:
		return intSize(int64(x)), true
	case int64:
		return intSize(x), true
	case uint:
		return uintSize(uint64(x)), true
	case uint8:
		return uintSize(uint64(x)), true
	case uint16:
		return uintSize(uint64(x)), true
	case uint32:
		return uintSize(uint64(x)), true
	case uint64:
		return uintSize(x), true
	case map[string]any:
		if x == nil {
			return 4, true
		}
		n := 2
		if len(x) > 1 {
			n += len(x) - 1
		}
		for k, e := range x {
			m, ok := sizeOf(e, depth+1)
			if !ok {
				return 0, false
			}
			n += stringSize(k) + 1 + m
		}
		return n, true
	case []any:
		if x == nil {
			return 4, true
		}
		n := 2
		if len(x) > 1 {
			n += len(x) - 1
		}
		for _, e := range x {
			m, ok := sizeOf(e, depth+1)
			if !ok {
				return 0, false
			}
			n += m
		}
		return n, true
	case map[string]string:
		if x == nil {
			return 4, true
		}
		n := 2
		if len(x) > 1 {
			n += len(x) - 1
		}
		for k, e := range x {
			n += stringSize(k) + 1 + stringSize(e)
		}
		return n, true
	case []string:
		if x == nil {
			return 4, true
		}
		n := 2
		if len(x) > 1 {
			n += len(x) - 1
		}
		for _, e := range x {
			n += stringSize(e)
		}
		return n, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return 0, false
	}
	return len(b), true
}

// stringSize follows encoding/json's string encoder: quotes, two-byte
// escapes for \" \\ \b \f \n \r \t, six-byte \u escapes for other control
// characters, the HTML characters < > &, U+2028, U+2029 and every byte of
// invalid UTF-8 (which becomes \ufffd).
func stringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// floatSize follows encoding/json's float encoder: %f-style digits, or
// exponent form for magnitudes below 1e-6 or from 1e21 up, with a
// two-digit negative exponent shortened (e-07 becomes e-7).
func floatSize(f float64, bits int) (int, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	var buf [64]byte
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b := strconv.AppendFloat(buf[:0], f, format, -1, bits)
	n := len(b)
	if format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		n--
	}
	return n, true
}

func intSize(i int64) int {
	var buf [24]byte
	return len(strconv.AppendInt(buf[:0], i, 10))
}

func uintSize(u uint64) int {
	var buf [24]byte
	return len(strconv.AppendUint(buf[:0], u, 10))
}
