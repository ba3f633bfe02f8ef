package server

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/batonhq/baton/record"
)

// checkStartID refuses a start's chosen id that record.CheckID refuses, or
// whose JSON text in body is not exactly the id decoded: encoding/json
// turns bytes that are not UTF-8, and \u escapes of lone surrogates, into
// U+FFFD, so that two different ids would name one instance.
func checkStartID(body []byte, id string) *apiError {
	var raw struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(body, &raw); err == nil && !exactJSONString(raw.ID) {
		return badField("id", "must be valid UTF-8 (it holds bytes or \\u escapes that are not)")
	}
	var ie *record.IDError
	if err := record.CheckID(id); errors.As(err, &ie) {
		return badField("id", ie.Reason)
	}
	return nil
}

// exactJSONString tells whether the JSON string s (quotes included, as
// the decoder accepted it) decodes without replacing anything: it is valid
// UTF-8 and each \u escape of a surrogate is half of a pair.
func exactJSONString(s []byte) bool {
	if !utf8.Valid(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			continue
		}
		if s[i+1] != 'u' {
			i++ // a one-letter escape: \" \\ \/ \b \f \n \r \t
			continue
		}
		r, ok := hex4(s, i+2)
		switch {
		case !ok:
			return false
		case r >= 0xDC00 && r <= 0xDFFF:
			return false // a low surrogate with no high one before it
		case r >= 0xD800 && r <= 0xDBFF:
			if i+12 > len(s) || s[i+6] != '\\' || s[i+7] != 'u' {
				return false
			}
			if low, ok := hex4(s, i+8); !ok || low < 0xDC00 || low > 0xDFFF {
				return false
			}
			i += 11
		default:
			i += 5
		}
	}
	return true
}

// hex4 reads the four hex digits of a \u escape at s[at:].
func hex4(s []byte, at int) (rune, bool) {
	if at+4 > len(s) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s[at:at+4]), 16, 32)
	return rune(v), err == nil
}
