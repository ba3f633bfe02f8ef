package wire

import (
	"math"

	"github.com/batonhq/baton/internal/jsonv"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
)

// The entries of a work message's content and metadata that Decode reads,
// as indexes of workFields.
const (
	fAction = iota
	fTask
	fInput
	fContext
	fPreviousResult
	fConstraints
	fReason
	fExplanation
	fReturnControl
	fPayload
	fItem
	fIndex
	fWorkflow // the first of the metadata's
	fVersion
	fInstanceID
	fStep
	fAttempt
	fState
	fHandoffID
	fIdempotencyKey
	fDeadline
	fHeartbeat
	fTraceparent
	numFields
)

// fieldKeys are the keys of the fields, by index.
var fieldKeys = [numFields]string{
	KeyAction, KeyTask, KeyInput, KeyContext, KeyPreviousResult, KeyConstraints, KeyReason, KeyExplanation,
	KeyReturnControl, KeyPayload, KeyItem, KeyIndex,
	KeyWorkflow, KeyVersion, KeyInstanceID, KeyStep, KeyAttempt, KeyState, KeyHandoffID, KeyIdempotencyKey,
	KeyDeadline, KeyHeartbeat, KeyTraceparent,
}

// fieldNames are the fields as errors name them.
var fieldNames = func() (names [numFields]string) {
	for i, k := range fieldKeys {
		if i < fWorkflow {
			names[i] = "content." + k
		} else {
			names[i] = "metadata." + k
		}
	}
	return names
}()

// workFields holds the entries Decode reads of a work message's content
// and metadata, by index: a string value apart, so that one read from JSON
// is not boxed in an any only to be taken out again.
type workFields struct {
	has, isStr uint32 // bits by index: the entry is there; its value is s[i]
	s          [numFields]string
	v          [numFields]any
}

// set keeps entry i with value v.
func (f *workFields) set(i int, v any) {
	if s, ok := v.(string); ok {
		f.setString(i, s)
		return
	}
	f.has |= 1 << i
	f.v[i] = v
}

// setString keeps entry i with string value s.
func (f *workFields) setString(i int, s string) {
	f.has |= 1 << i
	f.isStr |= 1 << i
	f.s[i] = s
}

// fromMaps keeps the entries of a message's content and metadata maps.
func (f *workFields) fromMaps(content, metadata map[string]any) {
	for i, k := range fieldKeys {
		src := content
		if i >= fWorkflow {
			src = metadata
		}
		if v, ok := src[k]; ok {
			f.set(i, v)
		}
	}
}

// get returns entry i's value as the message's map holds it.
func (f *workFields) get(i int) (any, bool) {
	switch {
	case f.has&(1<<i) == 0:
		return nil, false
	case f.isStr&(1<<i) != 0:
		return f.s[i], true
	}
	return f.v[i], true
}

// string returns entry i's value if it is a string.
func (f *workFields) string(i int) (string, bool) {
	return f.s[i], f.isStr&(1<<i) != 0
}

// absent reports an entry that is not there or is null.
func (f *workFields) absent(i int) bool {
	return f.has&(1<<i) == 0 || (f.isStr&(1<<i) == 0 && f.v[i] == nil)
}

// str reads entry i as a string; null is absent.
func (f *workFields) str(i int, required bool) (string, error) {
	if f.absent(i) {
		if required {
			return "", fieldError(fieldNames[i], "is required")
		}
		return "", nil
	}
	s, isStr := f.string(i)
	if !isStr {
		return "", fieldError(fieldNames[i], "must be a string")
	}
	if required && s == "" {
		return "", fieldError(fieldNames[i], "is required")
	}
	return s, nil
}

// integer reads entry i as an integer; null is absent.
func (f *workFields) integer(i int, required bool) (int, error) {
	if f.absent(i) {
		if required {
			return 0, fieldError(fieldNames[i], "is required")
		}
		return 0, nil
	}
	n, isNum := number(f.v[i])
	if f.isStr&(1<<i) != 0 || !isNum || n != math.Trunc(n) || math.Abs(n) > 1<<53 {
		return 0, fieldError(fieldNames[i], "must be an integer")
	}
	return int(n), nil
}

// object reads entry i as an object; null is absent.
func (f *workFields) object(i int) (map[string]any, error) {
	if f.absent(i) {
		return nil, nil
	}
	m, isMap := f.v[i].(map[string]any)
	if f.isStr&(1<<i) != 0 || !isMap {
		return nil, fieldError(fieldNames[i], "must be an object")
	}
	return m, nil
}

// read reads the object at d, the content (first to last, the indexes
// of its entries) or the metadata, keeping the entries Decode reads, each
// as Decoder.Map would read it; it fails on a key seen twice or one
// Decode does not read (but the transport's ack wait), which the caller
// then leaves to UnmarshalJSON and Decode.
func (f *workFields) read(d *jsonv.Decoder, first, last int) {
	d.Object(func(key string) {
		i := fieldIndex(key, first, last)
		switch {
		case i < 0 && first == fWorkflow && key == KeyAckWait:
			_ = d.Value()
		case i < 0 || f.has&(1<<i) != 0:
			d.Fail()
		case d.Peek() == '"' && i == fIdempotencyKey:
			// A hand-off's key is its id, which comes first.
			f.setString(i, d.StringOr(f.s[fHandoffID]))
		case d.Peek() == '"':
			f.setString(i, d.String())
		default:
			f.set(i, d.Value())
		}
	})
}

// fieldIndex is the index of key among the fields first to last, -1 if
// none.
func fieldIndex(key string, first, last int) int {
	for i := first; i <= last; i++ {
		if fieldKeys[i] == key {
			return i
		}
	}
	return -1
}

// DecodeWork reads the JSON of a work message straight into the message
// and its task, as UnmarshalJSON and then Decode would; the message it
// returns has no content or metadata (the task holds what they carried).
// ok is false for anything but the form the transports write, or for
// work Decode would refuse: the caller then reads data with UnmarshalJSON
// and Decode, which word the error. A Worker on NATS takes work this way:
// the content and metadata maps, and the values boxed in them, were most
// of the garbage of decoding the work it takes.
func DecodeWork(data []byte) (m *transport.Message, t *registry.Task, ok bool) {
	var f workFields
	msg, ok := transport.DecodeParts(data,
		func(d *jsonv.Decoder) { f.read(d, fAction, fIndex) },
		func(d *jsonv.Decoder) { f.read(d, fWorkflow, fTraceparent) })
	if !ok {
		return nil, nil, false
	}
	t, err := decodeTask(&msg, &f)
	if err != nil {
		return nil, nil, false
	}
	return &msg, t, true
}
