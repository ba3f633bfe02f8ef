package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxPayloadDepth bounds the nesting walked by payloadSize; deeper values
// (or cycles) are refused rather than followed.
const maxPayloadDepth = 256

// payloadSize estimates the JSON-encoded size of v in bytes without encoding
// the common JSON-like types, stopping as soon as the size passes limit. It
// reports ok=false when v cannot be encoded as JSON (a NaN, a channel, a
// cycle). Strings count their raw bytes plus quotes: the estimate ignores
// escaping, which only ever makes the real encoding larger.
func payloadSize(v any, limit int) (n int, ok bool) {
	w := sizer{limit: limit}
	ok = w.walk(v, 0)
	return w.n, ok
}

// payloadCheck is payloadSize that also says why a payload was refused:
// for a string or key that is not valid UTF-8 and for a value whose
// MarshalJSON panicked, bad names the field (".order.items[2]", relative to
// the payload) and reason what is wrong with it; for other refusals both are
// empty.
func payloadCheck(v any, limit int) (n int, ok bool, bad, reason string) {
	w := sizer{limit: limit}
	ok = w.walk(v, 0)
	if !ok && w.reason != "" {
		var b strings.Builder
		for i := len(w.trail) - 1; i >= 0; i-- {
			b.WriteString(w.trail[i])
		}
		bad, reason = b.String(), w.reason
	}
	return w.n, ok, bad, reason
}

type sizer struct {
	n, limit int
	// reason and trail (the path to the failure, innermost first) describe
	// a failure that names its field.
	reason string
	trail  []string
}

func (w *sizer) walk(v any, depth int) bool {
	if w.n > w.limit {
		return true
	}
	if depth > maxPayloadDepth {
		return false
	}
	switch x := v.(type) {
	case nil:
		w.n += 4
	case string:
		if !utf8.ValidString(x) {
			w.reason = "is not valid UTF-8"
			return false
		}
		w.n += len(x) + 2
	case bool:
		w.n += 5
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
		w.n += 24
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
		w.n += 16
	case int, int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8:
		w.n += 20
	case json.Number:
		w.n += len(x)
	case []byte:
		w.n += (len(x)+2)/3*4 + 2
	case map[string]any:
		w.n += 2
		for k, e := range x {
			if !utf8.ValidString(k) {
				w.reason = "has a key that is not valid UTF-8: " + strconv.Quote(k)
				return false
			}
			w.n += len(k) + 4
			if !w.walk(e, depth+1) {
				w.trail = append(w.trail, "."+k)
				return false
			}
			if w.n > w.limit {
				return true
			}
		}
	case []any:
		w.n += 2
		for i, e := range x {
			w.n++
			if !w.walk(e, depth+1) {
				w.trail = append(w.trail, "["+strconv.Itoa(i)+"]")
				return false
			}
			if w.n > w.limit {
				return true
			}
		}
	case map[string]string:
		w.n += 2
		for k, e := range x {
			if !utf8.ValidString(k) {
				w.reason = "has a key that is not valid UTF-8: " + strconv.Quote(k)
				return false
			}
			if !utf8.ValidString(e) {
				w.trail = append(w.trail, "."+k)
				w.reason = "is not valid UTF-8"
				return false
			}
			w.n += len(k) + len(e) + 6
		}
	case []string:
		w.n += 2
		for i, e := range x {
			if !utf8.ValidString(e) {
				w.trail = append(w.trail, "["+strconv.Itoa(i)+"]")
				w.reason = "is not valid UTF-8"
				return false
			}
			w.n += len(e) + 3
		}
	default:
		b, err := w.marshal(x)
		if err != nil {
			return false
		}
		w.n += len(b)
	}
	return true
}

// marshal encodes a value of another type, turning a panic of its
// MarshalJSON (which encoding/json lets through) into a refusal.
func (w *sizer) marshal(x any) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			w.reason = fmt.Sprintf("cannot be encoded as JSON: %T's MarshalJSON panicked: %v", x, r)
			b, err = nil, errMarshalPanic
		}
	}()
	return json.Marshal(x)
}

var errMarshalPanic = errors.New("MarshalJSON panicked")

// sizeKB formats a byte count as kilobytes with one decimal, for logs.
func sizeKB(n int) string { return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) }
