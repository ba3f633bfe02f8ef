package llmagent

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxQuoted is how much of a bad answer an error quotes.
const maxQuoted = 200

// answer is the JSON object the response format asks the model for.
type answer struct {
	Trigger *string         `json:"trigger"`
	Result  json.RawMessage `json:"result"`
}

// decodeAnswer reads the model's answer: a JSON object with a trigger
// (one of triggers, when there are any) and a result that is an object or
// null (an empty result), and nothing else.
func decodeAnswer(text string, triggers []string) (string, map[string]any, *AnswerError) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	var a answer
	if err := dec.Decode(&a); err != nil {
		return "", nil, &AnswerError{Reason: "is not a JSON object with trigger and result", Answer: quoted(text)}
	}
	if dec.More() {
		return "", nil, &AnswerError{Reason: "has more than one JSON value", Answer: quoted(text)}
	}
	if a.Trigger == nil || *a.Trigger == "" {
		return "", nil, &AnswerError{Reason: "names no trigger", Answer: quoted(text)}
	}
	if len(triggers) > 0 && !slices.Contains(triggers, *a.Trigger) {
		return "", nil, &AnswerError{Reason: "names trigger " + strconv.Quote(quoted(*a.Trigger)) + ", which is not one of " + strings.Join(triggers, ", "), Answer: quoted(text)}
	}
	result := map[string]any{}
	if raw := bytes.TrimSpace(a.Result); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if raw[0] != '{' || json.Unmarshal(raw, &result) != nil {
			return "", nil, &AnswerError{Reason: "has a result that is not an object", Answer: quoted(text)}
		}
	}
	return *a.Trigger, result, nil
}

// quoted is the start of s, at most maxQuoted bytes, cut at a rune.
func quoted(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	s = s[:maxQuoted]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "..."
}
