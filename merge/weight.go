package merge

import (
	"encoding/json"
	"math"
	"strconv"
)

// the weights of one reply in a weighted vote.
const (
	expertiseShare  = 0.5
	confidenceShare = 0.3
	accuracyShare   = 0.2
)

// Weight is the weight of one reply: 0.5 × the agent's expertise +
// 0.3 × the reply's confidence + 0.2 × the agent's historical accuracy.
// Each input is clamped to [0, 1] first (NaN counts as 0), so the weight is
// always in [0, 1].
func Weight(v Voter, confidence float64) float64 {
	return expertiseShare*unit(v.Expertise) +
		confidenceShare*unit(confidence) +
		accuracyShare*unit(v.Accuracy)
}

// unit clamps x to [0, 1], mapping NaN to 0 so that no weight is NaN.
func unit(x float64) float64 {
	switch {
	case x > 1:
		return 1
	case x >= 0:
		return x
	default: // negative or NaN
		return 0
	}
}

// OptionOf reads the option an agent chose, and how confident it is, from
// its result map (replies carry `option` and `confidence`).
//
// The option is the `option` value: a string as is, a number or a bool in
// its shortest text form (YAML's `option: 2` and JSON's "2" agree); a
// missing, null or structured value abstains ("").
//
// The confidence is the `confidence` value, any Go number or json.Number,
// clamped to [0, 1]. When it is missing or null the agent stated its option
// without hedging, so the confidence is 1; a value that is not a number
// (or is NaN) earns no trust and counts as 0.
func OptionOf(result map[string]any) (option string, confidence float64) {
	option = optionText(result["option"])
	c, ok := result["confidence"]
	if !ok || c == nil {
		return option, 1
	}
	f, ok := number(c)
	if !ok {
		return option, 0
	}
	return option, unit(f)
}

// optionText renders a scalar option; anything else abstains.
func optionText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	}
	if i, ok := integer(v); ok {
		return strconv.FormatInt(i, 10)
	}
	if u, ok := v.(uint64); ok {
		return strconv.FormatUint(u, 10)
	}
	if u, ok := v.(uint); ok {
		return strconv.FormatUint(uint64(u), 10)
	}
	return ""
}

// number converts any Go number or json.Number to float64.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x)
	case float32:
		return float64(x), !math.IsNaN(float64(x))
	case json.Number:
		f, err := x.Float64()
		return f, err == nil && !math.IsNaN(f)
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	if i, ok := integer(v); ok {
		return float64(i), true
	}
	return 0, false
}

// integer converts the signed integers and the narrow unsigned ones, which
// all fit in an int64.
func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	}
	return 0, false
}
