package registry

import (
	"strconv"
	"strings"
)

// StepKey is the idempotency key of a step of an instance,
// "instanceID:step": the id of the hand-off that starts the step, the key
// its work travels under, and what an agent may deduplicate its side
// effects by.
func StepKey(instanceID string, step int) string {
	return instanceID + ":" + strconv.Itoa(step)
}

// SplitStepKey returns the instance and the step of a key StepKey made. The
// instance is everything before the last ':' (an instance id may hold ':'
// itself); a key without one is all instance, and a step that is not a
// number is 0.
func SplitStepKey(key string) (instanceID string, step int) {
	k := strings.LastIndexByte(key, ':')
	instanceID = key
	if k >= 0 {
		instanceID = key[:k]
	}
	step, _ = strconv.Atoi(key[k+1:])
	return instanceID, step
}

// Key returns the task's idempotency key: IdempotencyKey, or the key of its
// step when it has none.
func (t *Task) Key() string {
	if t.IdempotencyKey != "" {
		return t.IdempotencyKey
	}
	return StepKey(t.InstanceID, t.Step)
}
