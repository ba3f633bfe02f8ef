package a2aagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/batonhq/baton/registry"
)

// messageOutcome is the outcome of a Message answer: completed, with its
// first data part as the result when it is an object, else its text.
func messageOutcome(m *message) (registry.Outcome, error) {
	out := registry.Outcome{Trigger: "completed", Usage: usageOf(m.Metadata)}
	v, ok, err := firstData(m.Parts)
	if err != nil {
		return out, &AnswerError{Method: "message", Reason: "data part: " + err.Error()}
	}
	if obj, isObj := v.(map[string]any); ok && isObj {
		out.Result = obj
	} else {
		out.Result = map[string]any{"text": joinText(m.Parts)}
	}
	return out, nil
}

// taskOutcome is the outcome of a settled task (see the package
// documentation for the mapping).
func taskOutcome(tk *task) (registry.Outcome, error) {
	out := registry.Outcome{Usage: usageOf(tk.Metadata)}
	var text string
	var parts []part
	if m := tk.Status.Message; m != nil {
		text, parts = joinText(m.Parts), m.Parts
	}
	switch tk.State {
	case stateCompleted:
		var all []part
		for _, ar := range tk.Artifacts {
			all = append(all, ar.Parts...)
		}
		result := map[string]any{}
		v, ok, err := firstData(all)
		if err != nil {
			return out, &AnswerError{Method: "task", Reason: "artifact data part: " + err.Error()}
		}
		if obj, isObj := v.(map[string]any); ok && isObj {
			result = obj
		}
		if hasText(all) {
			result["text"] = joinText(all)
		}
		result["task_id"] = tk.ID
		out.Trigger, out.Result = "completed", result
		return out, nil
	case stateInputRequired:
		v, ok, err := firstData(parts)
		if err != nil {
			return out, &AnswerError{Method: "task", Reason: "status data part: " + err.Error()}
		}
		if !ok {
			v = map[string]any{}
		}
		out.Trigger, out.Result = "input_required", map[string]any{"task_id": tk.ID, "text": text, "data": v}
		return out, nil
	case stateRejected:
		return out, registry.Reject(text)
	}
	return out, &TaskError{TaskID: tk.ID, State: tk.State, Message: excerpt([]byte(text))}
}

// usageOf reads metadata.usage; usage that does not decode is none.
func usageOf(meta map[string]any) registry.Usage {
	raw, ok := meta["usage"]
	if !ok {
		return registry.Usage{}
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return registry.Usage{}
	}
	var u struct {
		InputTokens  float64 `json:"input_tokens"`
		OutputTokens float64 `json:"output_tokens"`
		Cost         float64 `json:"cost"`
		Model        string  `json:"model"`
	}
	if json.Unmarshal(b, &u) != nil {
		return registry.Usage{}
	}
	return registry.Usage{InputTokens: tokens(u.InputTokens), OutputTokens: tokens(u.OutputTokens), Cost: u.Cost, Model: u.Model}
}

// tokens converts a count that may be past what an int64 holds (the
// conversion of such a float is not defined).
func tokens(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// classify gives a run's error its kind, and marks those retrying cannot
// fix as permanent.
func classify(err error) error {
	if err == nil || errors.Is(err, registry.ErrRejected) {
		return err
	}
	var (
		se *StatusError
		re *RPCError
		te *TaskError
		ce *CardError
	)
	switch {
	case errors.As(err, &se):
		switch {
		case se.Unauthorized():
			return registry.Permanent(registry.Kind(err, "unauthorized"))
		case se.Retryable():
			return registry.Kind(err, "transport")
		}
		return registry.Permanent(registry.Kind(err, "transport"))
	case errors.As(err, &re):
		return registry.Kind(err, "agent_error")
	case errors.As(err, &te):
		switch te.State {
		case stateFailed:
			return registry.Kind(err, "agent_failed")
		case stateCanceled:
			return registry.Permanent(registry.Kind(err, "cancelled"))
		}
		return registry.Permanent(registry.Kind(err, "auth_required"))
	case errors.As(err, &ce):
		// A card that is missing or says nothing this client speaks is
		// a configuration problem: another try reads the same card.
		return registry.Permanent(registry.Kind(err, "agent_error"))
	case errors.Is(err, ErrAnswer), errors.Is(err, errTooLarge):
		return registry.Kind(err, "invalid_result")
	}
	return registry.Kind(fmt.Errorf("a2aagent: %w", err), "transport")
}
