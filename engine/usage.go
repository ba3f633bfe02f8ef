package engine

import (
	"errors"

	"github.com/batonhq/baton/registry"
)

// checkUsage refuses usage that is negative or not a finite number, naming
// the field (usage.cost, say): a Go handler's run fails with it (kind
// invalid_result), a report is refused with it at the door.
func checkUsage(u registry.Usage) *InputError {
	err := u.Validate()
	if err == nil {
		return nil
	}
	var ue *registry.UsageError
	if errors.As(err, &ue) {
		return &InputError{Field: "usage." + ue.Field, Reason: ue.Reason}
	}
	return &InputError{Field: "usage", Reason: err.Error()}
}
