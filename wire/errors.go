package wire

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched by every decoding error.
var ErrInvalid = errors.New("wire: invalid")

// FieldError says which field of a message or report is wrong.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("wire: %s %s", e.Field, e.Reason) }

// Unwrap returns ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func fieldError(field, reason string) error { return &FieldError{Field: field, Reason: reason} }
