package rules

import "fmt"

// Limits on the size of a workflow file. Loading refuses a file beyond any
// of them with a positioned error, so that a hostile or generated file
// cannot make loading, compiling the state machine or linting take
// unbounded time or memory. Within them, loading and compiling are linear
// in the file's size.
const (
	// MaxFileSize is the largest workflow file accepted, in bytes (1 MiB).
	MaxFileSize = 1 << 20
	// MaxStates is the largest number of states a workflow may declare.
	MaxStates = 5000
	// MaxRules is the largest number of rules a workflow may declare.
	MaxRules = 10000
)

// tooLarge reports a file over MaxFileSize.
func tooLarge(size int) string {
	return fmt.Sprintf("workflow file is too large: %d bytes, the limit is %d (1 MiB)", size, MaxFileSize)
}
