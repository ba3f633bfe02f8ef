package bus

import (
	"encoding/json"
	"math"
	"strconv"
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

type sizer struct {
	n, limit int
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
			w.n += len(k) + 4
			if !w.walk(e, depth+1) {
				return false
			}
			if w.n > w.limit {
				return true
			}
		}
	case []any:
		w.n += 2
		for _, e := range x {
			w.n++
			if !w.walk(e, depth+1) {
				return false
			}
			if w.n > w.limit {
				return true
			}
		}
	case map[string]string:
		w.n += 2
		for k, e := range x {
			w.n += len(k) + len(e) + 6
		}
	case []string:
		w.n += 2
		for _, e := range x {
			w.n += len(e) + 3
		}
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return false
		}
		w.n += len(b)
	}
	return true
}

// sizeKB formats a byte count as kilobytes with one decimal, for logs.
func sizeKB(n int) string { return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) }
