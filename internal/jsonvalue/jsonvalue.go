// Package jsonvalue is the one walker of the JSON-like values data is made
// of (maps, slices, strings, numbers, booleans): in one pass it measures a
// value's size as JSON, the length json.Marshal would give, without
// building the encoding, and checks that the value is one every store and
// transport can encode.
package jsonvalue

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// MaxDepth is how deep a value Check takes may nest.
const MaxDepth = 64

// maxSizeDepth bounds the nesting Size follows; a deeper value (or a
// cycle) is measured as unknown rather than followed.
const maxSizeDepth = 256

// Error says where below the value checked (".items[2].price", "" for the
// value itself) and why the value is refused.
type Error struct {
	Field  string
	Reason string
}

func (e *Error) Error() string { return "jsonvalue: " + e.Field + " " + e.Reason }

// Check tells whether v is a value every store and transport can encode,
// in at most limit bytes as JSON. It refuses a string or key that is not
// valid UTF-8, a NaN or infinite number, nesting deeper than MaxDepth, a
// value of another type that json.Marshal refuses (or whose MarshalJSON
// panics), and a value larger than limit; the *Error names the field.
//
// The walk that checks also bounds the size from above (a string as if
// every byte were escaped, a number as 24 bytes), so that ordinary data is
// walked once and costs no allocation; only a value whose bound passes the
// limit is measured exactly, by a second walk of the same walker.
func Check(v any, limit int) *Error {
	n, err := Measure(v, limit, MaxDepth)
	if err != nil {
		return err
	}
	if n > limit {
		return &Error{Reason: fmt.Sprintf("is %d bytes as JSON, more than %d", n, limit)}
	}
	return nil
}

// Measure is Check's walk for a caller with limits of its own: it refuses
// what Check refuses but nesting deeper than maxDepth (rather than
// MaxDepth), and it does not refuse a large value; it returns an upper
// bound of v's size as JSON when that bound is at most limit, and the exact
// size otherwise. n > limit thus means the value is larger than limit, and
// n <= limit that it is not; ordinary data is walked once.
func Measure(v any, limit, maxDepth int) (n int, err *Error) {
	n, err = walker{strict: true, maxDepth: maxDepth}.walk(v, 0)
	if err != nil || n <= limit {
		return n, err
	}
	n, err = walker{exact: true, maxDepth: maxDepth}.walk(v, 0)
	return n, err
}

// Size returns the length in bytes of json.Marshal(v) for the JSON-like
// types without encoding them (a string that is not valid UTF-8 is measured
// as json.Marshal writes it), or -1 when v cannot be encoded.
func Size(v any) int {
	n, err := walker{exact: true, maxDepth: maxSizeDepth}.walk(v, 0)
	if err != nil {
		return -1
	}
	return n
}

// walker holds the mode of one walk. A strict walk refuses what is not
// valid UTF-8 and nests deeper than MaxDepth, where a measuring one only
// gives up on what cannot be encoded. An exact walk returns the size as
// JSON; another returns an upper bound of it, which costs less.
type walker struct {
	strict, exact bool
	maxDepth      int
}

func (w walker) walk(v any, depth int) (int, *Error) {
	if depth > w.maxDepth {
		return 0, &Error{Reason: fmt.Sprintf("nests deeper than %d levels", w.maxDepth)}
	}
	switch x := v.(type) {
	case nil:
		return 4, nil
	case string:
		n, ok := 6*len(x)+2, true // the bound, written out here: a call costs as much
		if w.exact {
			n, ok = stringSize(x)
		} else {
			ok = ValidUTF8(x)
		}
		if !ok && w.strict {
			return 0, &Error{Reason: "is not valid UTF-8"}
		}
		return n, nil
	case bool:
		if x {
			return 4, nil
		}
		return 5, nil
	case float64:
		if !w.exact && !math.IsNaN(x) && !math.IsInf(x, 0) {
			return maxFloat, nil // the bound, without floatSize's call
		}
		return w.floatSize(x, 64)
	case float32:
		return w.floatSize(float64(x), 32)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		if !w.exact {
			return maxInt, nil
		}
		return integerSize(x), nil
	case json.Number:
		if x == "" {
			return 1, nil // encoding/json writes an empty number as 0
		}
		return len(x), nil
	case map[string]any:
		if x == nil {
			return 4, nil
		}
		n := 2 + max(len(x)-1, 0)
		if smallMaps {
			if g, full, ok := smallGroup(x); ok {
				for ; full != 0; full &= full - 1 {
					s := &g.slots[bits.TrailingZeros64(full)>>3]
					m, err := w.member(s.key, s.elem, depth)
					if err != nil {
						return 0, err
					}
					n += m
				}
				return n, nil
			}
		}
		// member, written out: a call per member cost a fifth more on a
		// 20-member map (measured), and large maps are ranged over.
		for k, e := range x {
			kn, ok := 6*len(k)+2, true
			if w.exact {
				kn, ok = stringSize(k)
			} else {
				ok = ValidUTF8(k)
			}
			if !ok && w.strict {
				return 0, &Error{Reason: "has a key that is not valid UTF-8: " + strconv.Quote(k)}
			}
			var m int
			var err *Error
			if s, isString := e.(string); isString {
				valid := true
				if m = 6*len(s) + 2; w.exact {
					m, valid = stringSize(s)
				} else {
					valid = ValidUTF8(s)
				}
				if !valid && w.strict {
					err = &Error{Reason: "is not valid UTF-8"}
				}
			} else {
				m, err = w.walk(e, depth+1)
			}
			if err != nil {
				err.Field = "." + k + err.Field
				return 0, err
			}
			n += kn + 1 + m
		}
		return n, nil
	case []any:
		return walkList(w, x, depth)
	case []map[string]any:
		return walkList(w, x, depth)
	case []string:
		if x == nil {
			return 4, nil
		}
		n := 2 + max(len(x)-1, 0)
		for i, e := range x {
			m, ok := w.stringSize(e)
			if !ok && w.strict {
				return 0, &Error{Field: "[" + strconv.Itoa(i) + "]", Reason: "is not valid UTF-8"}
			}
			n += m
		}
		return n, nil
	case map[string]string:
		// Measured as json.Marshal writes it: invalid UTF-8 is replaced, not
		// refused, as it always was for this type.
		if x == nil {
			return 4, nil
		}
		n := 2 + max(len(x)-1, 0)
		for k, e := range x {
			kn, _ := w.stringSize(k)
			en, _ := w.stringSize(e)
			n += kn + 1 + en
		}
		return n, nil
	}
	return marshalSize(v)
}

// member returns the size of the member k: e of a map at depth (the walk
// of a large map writes it out).
func (w walker) member(k string, e any, depth int) (int, *Error) {
	kn, ok := 6*len(k)+2, true
	if w.exact {
		kn, ok = stringSize(k)
	} else {
		ok = ValidUTF8(k)
	}
	if !ok && w.strict {
		return 0, &Error{Reason: "has a key that is not valid UTF-8: " + strconv.Quote(k)}
	}
	// A string, the commonest value, is measured here rather than by a
	// call one level down (depth cannot matter for it).
	var m int
	var err *Error
	if s, isString := e.(string); isString {
		valid := true
		if m = 6*len(s) + 2; w.exact {
			m, valid = stringSize(s)
		} else {
			valid = ValidUTF8(s)
		}
		if !valid && w.strict {
			err = &Error{Reason: "is not valid UTF-8"}
		}
	} else {
		m, err = w.walk(e, depth+1)
	}
	if err != nil {
		err.Field = "." + k + err.Field
		return 0, err
	}
	return kn + 1 + m, nil
}

// walkList walks the elements of a list one level deeper.
func walkList[E any](w walker, x []E, depth int) (int, *Error) {
	if x == nil {
		return 4, nil
	}
	n := 2 + max(len(x)-1, 0)
	for i, e := range x {
		m, err := w.walk(e, depth+1)
		if err != nil {
			err.Field = "[" + strconv.Itoa(i) + "]" + err.Field
			return 0, err
		}
		n += m
	}
	return n, nil
}

// marshalSize encodes a value of another type (a struct a handler returned,
// say) to measure it; a panicking MarshalJSON is an error too.
func marshalSize(v any) (n int, verr *Error) {
	defer func() {
		if p := recover(); p != nil {
			n, verr = 0, &Error{Reason: fmt.Sprintf("cannot be encoded: its MarshalJSON panicked: %v", p)}
		}
	}()
	b, err := json.Marshal(v)
	if err != nil {
		return 0, &Error{Reason: fmt.Sprintf("cannot be encoded as JSON (%s): %v", reflect.TypeOf(v), err)}
	}
	return len(b), nil
}

// asciiSize is the length encoding/json writes for each ASCII byte: two for
// \" \\ \b \f \n \r \t, six for a \u escape (other control characters
// and the HTML characters < > &), one for the rest.
var asciiSize = func() (t [utf8.RuneSelf]uint8) {
	for b := range t {
		switch {
		case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
			t[b] = 2
		case b < 0x20 || b == '<' || b == '>' || b == '&':
			t[b] = 6
		default:
			t[b] = 1
		}
	}
	return t
}()

// maxFloat bounds the length of a float as JSON.
const maxFloat = 24

// stringSize is the size of s as JSON, exact or bounded as the walk is,
// and whether s is valid UTF-8.
func (w walker) stringSize(s string) (int, bool) {
	if !w.exact {
		return 6*len(s) + 2, ValidUTF8(s)
	}
	return stringSize(s)
}

// stringSize follows encoding/json's string encoder: quotes, the escapes of
// asciiSize, and six-byte \u escapes for U+2028, U+2029 and every byte of
// invalid UTF-8 (which becomes \ufffd). ok is false when s is not valid
// UTF-8.
func stringSize(s string) (n int, ok bool) {
	n, ok = 2, true
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			n += int(asciiSize[b])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
			ok = false
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n, ok
}

// floatSize follows encoding/json's float encoder: %f-style digits, or
// exponent form for magnitudes below 1e-6 or from 1e21 up, with a
// two-digit negative exponent shortened (e-07 becomes e-7).
func (w walker) floatSize(f float64, bits int) (int, *Error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, &Error{Reason: fmt.Sprintf("is %v, which JSON cannot hold", f)}
	}
	if !w.exact {
		return maxFloat, nil
	}
	abs := math.Abs(f)
	if abs < 1e15 && f == math.Trunc(f) && !(f == 0 && math.Signbit(f)) {
		return intSize(int64(f)), nil // written without a fraction or exponent
	}
	var buf [64]byte
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
	return n, nil
}

// maxInt bounds the length of an integer as JSON: "-9223372036854775808"
// and "18446744073709551615" have 20 bytes.
const maxInt = 20

// integerSize is the length of an integer of any of Go's integer types as
// JSON.
func integerSize(v any) int {
	switch x := v.(type) {
	case int:
		return intSize(int64(x))
	case int8:
		return intSize(int64(x))
	case int16:
		return intSize(int64(x))
	case int32:
		return intSize(int64(x))
	case int64:
		return intSize(x)
	case uint:
		return uintSize(uint64(x))
	case uint8:
		return uintSize(uint64(x))
	case uint16:
		return uintSize(uint64(x))
	case uint32:
		return uintSize(uint64(x))
	case uint64:
		return uintSize(x)
	}
	return 0
}

func intSize(i int64) int {
	var buf [24]byte
	return len(strconv.AppendInt(buf[:0], i, 10))
}

func uintSize(u uint64) int {
	var buf [24]byte
	return len(strconv.AppendUint(buf[:0], u, 10))
}
