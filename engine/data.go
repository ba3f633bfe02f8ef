package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/registry"
)

// MaxData is the largest start input or agent result, as JSON, the engine
// takes: the size every transport carries.
const MaxData = 1 << 20

// maxDataDepth bounds how deep a value may nest.
const maxDataDepth = 64

// checkData is the door every piece of data passes once, where it enters
// the engine (a start input, an agent's result): it must be what every
// store and transport can encode — JSON values with finite numbers and
// valid UTF-8 — and at most MaxData bytes. The error names the field.
func checkData(root string, m map[string]any) *InputError {
	var bound int
	if err := checkValue(m, 0, &bound); err != nil {
		err.Field = root + err.Field
		return err
	}
	if bound <= MaxData {
		return nil // even written with every character escaped it fits
	}
	if n := handoff.JSONSize(m); n > MaxData {
		return &InputError{Field: root, Reason: fmt.Sprintf("is %d bytes as JSON, more than %d", n, MaxData)}
	}
	return nil
}

// checkValue checks v; an error's Field is the path below v (".key[3]"),
// built only on the way out of a failure, so that good data costs nothing.
// It adds to bound an upper bound of v's size as JSON (a string's every
// byte escaped as \u00XX), so that only data near the limit is measured.
func checkValue(v any, depth int, bound *int) *InputError {
	if depth > maxDataDepth {
		return &InputError{Reason: fmt.Sprintf("nests deeper than %d levels", maxDataDepth)}
	}
	switch x := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		*bound += 24
		return nil
	case json.Number:
		*bound += len(x)
		return nil
	case string:
		*bound += 6*len(x) + 2
		if !utf8.ValidString(x) {
			return &InputError{Reason: "is not valid UTF-8"}
		}
	case float64:
		*bound += 24
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return &InputError{Reason: fmt.Sprintf("is %v, which JSON cannot hold", x)}
		}
	case float32:
		return checkValue(float64(x), depth, bound)
	case map[string]any:
		*bound += 2
		for k, e := range x {
			*bound += 6*len(k) + 4
			if !utf8.ValidString(k) {
				return &InputError{Reason: "has a key that is not valid UTF-8: " + strconv.Quote(k)}
			}
			if err := checkValue(e, depth+1, bound); err != nil {
				err.Field = "." + k + err.Field
				return err
			}
		}
	case []any:
		return checkList(x, depth, bound)
	case []string:
		*bound += 2
		for k, e := range x {
			*bound += 6*len(e) + 3
			if !utf8.ValidString(e) {
				return &InputError{Field: "[" + strconv.Itoa(k) + "]", Reason: "is not valid UTF-8"}
			}
		}
	case []map[string]any:
		*bound += 2
		for k, e := range x {
			*bound++
			if err := checkValue(e, depth+1, bound); err != nil {
				err.Field = "[" + strconv.Itoa(k) + "]" + err.Field
				return err
			}
		}
	default:
		*bound += MaxData + 1 // another type: measured exactly
		return checkOther(v)
	}
	return nil
}

func checkList(x []any, depth int, bound *int) *InputError {
	*bound += 2
	for k, e := range x {
		*bound++
		if err := checkValue(e, depth+1, bound); err != nil {
			err.Field = "[" + strconv.Itoa(k) + "]" + err.Field
			return err
		}
	}
	return nil
}

// checkOther encodes a value of another type (a struct a handler returned,
// say) to tell whether it is JSON; a panicking MarshalJSON is an error too.
func checkOther(v any) (ierr *InputError) {
	defer func() {
		if p := recover(); p != nil {
			ierr = &InputError{Reason: fmt.Sprintf("cannot be encoded: its MarshalJSON panicked: %v", p)}
		}
	}()
	if _, err := json.Marshal(v); err != nil {
		return &InputError{Reason: fmt.Sprintf("cannot be encoded as JSON (%s): %v", reflect.TypeOf(v), err)}
	}
	return nil
}

// checkOutcome checks the data of an agent's outcome: its result and, for a
// dynamic hand-off, its payload.
func checkOutcome(out registry.Outcome) *InputError {
	if err := checkData("result", out.Result); err != nil {
		return err
	}
	if out.Handoff != nil {
		return checkData("handoff.payload", out.Handoff.Payload)
	}
	return nil
}
