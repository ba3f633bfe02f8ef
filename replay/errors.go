package replay

import (
	"errors"
	"fmt"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrLineTooLong means a line of a JSON-lines history is longer than
	// MaxLineBytes.
	ErrLineTooLong = errors.New("replay: history line too long")
	// ErrNilArgument means a required argument (a reader, a workflow) is nil.
	ErrNilArgument = errors.New("replay: nil argument")
)

// LineError is a line of a JSON-lines history that could not be read.
type LineError struct {
	Line int // from 1
	Err  error
}

func (e *LineError) Error() string {
	if errors.Is(e.Err, ErrLineTooLong) {
		return fmt.Sprintf("replay: history line %d: longer than %d bytes", e.Line, MaxLineBytes)
	}
	return fmt.Sprintf("replay: history line %d: %v", e.Line, e.Err)
}

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }
