package record

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxIDLen is the longest instance id, in bytes, that a caller may choose
// for a start. It bounds what a client can make a store keep under one key
// and what every tool prints; a child workflow's instance, whose id the
// engine derives from its parent's (<parent>/<STATE>/<visit>), may be longer
// and is checked only by the store.
const MaxIDLen = 1024

// CheckID tells whether id may be the id of an instance a caller starts:
// non-empty valid UTF-8 of at most MaxIDLen bytes, without control
// characters, and not "." or ".." (which no URL path can name unescaped).
// It returns nil or an *IDError (errors.Is ErrInvalidID) saying why not.
func CheckID(id string) error {
	reason := ""
	switch {
	case id == "":
		reason = "must not be empty"
	case len(id) > MaxIDLen:
		reason = fmt.Sprintf("is %d bytes long, more than the %d allowed", len(id), MaxIDLen)
	case !utf8.ValidString(id):
		reason = "must be valid UTF-8"
	case strings.ContainsFunc(id, unicode.IsControl):
		reason = "must not contain control characters"
	case id == "." || id == "..":
		reason = `must not be "." or ".."`
	default:
		return nil
	}
	return &IDError{ID: id, Reason: reason}
}

// IDError is an instance id CheckID refuses.
type IDError struct {
	ID     string
	Reason string
}

// Error quotes at most the id's first 64 bytes: an id refused for its
// length would otherwise fill a log line.
func (e *IDError) Error() string {
	id := e.ID
	if len(id) > 64 {
		id = id[:64] + "..."
	}
	return fmt.Sprintf("record: instance id %q %s", id, e.Reason)
}

// Unwrap returns ErrInvalidID.
func (e *IDError) Unwrap() error { return ErrInvalidID }
