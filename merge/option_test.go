package merge_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/batonhq/baton/merge"
)

func TestOptionOf(t *testing.T) {
	tests := []struct {
		name       string
		result     map[string]any
		option     string
		confidence float64
	}{
		{"nil result", nil, "", 1},
		{"empty result", map[string]any{}, "", 1},
		{"option without confidence", map[string]any{"option": "refund"}, "refund", 1},
		{"null confidence is absent", map[string]any{"option": "refund", "confidence": nil}, "refund", 1},
		{"float confidence", map[string]any{"option": "refund", "confidence": 0.7}, "refund", 0.7},
		{"float32 confidence", map[string]any{"option": "refund", "confidence": float32(0.5)}, "refund", 0.5},
		{"int confidence 1", map[string]any{"option": "refund", "confidence": 1}, "refund", 1},
		{"int confidence 0", map[string]any{"option": "refund", "confidence": 0}, "refund", 0},
		{"uint8 confidence", map[string]any{"option": "a", "confidence": uint8(1)}, "a", 1},
		{"uint64 confidence", map[string]any{"option": "a", "confidence": uint64(0)}, "a", 0},
		{"json.Number confidence", map[string]any{"option": "a", "confidence": json.Number("0.4")}, "a", 0.4},
		{"bad json.Number confidence", map[string]any{"option": "a", "confidence": json.Number("x")}, "a", 0},
		{"confidence above 1 clamps", map[string]any{"option": "a", "confidence": 1.5}, "a", 1},
		{"negative confidence clamps", map[string]any{"option": "a", "confidence": -0.2}, "a", 0},
		{"large int confidence clamps", map[string]any{"option": "a", "confidence": 80}, "a", 1},
		{"string confidence earns no trust", map[string]any{"option": "a", "confidence": "0.8"}, "a", 0},
		{"NaN confidence earns no trust", map[string]any{"option": "a", "confidence": math.NaN()}, "a", 0},
		{"bool confidence earns no trust", map[string]any{"option": "a", "confidence": true}, "a", 0},
		{"confidence without option", map[string]any{"confidence": 0.9}, "", 0.9},
		{"int option", map[string]any{"option": 2}, "2", 1},
		{"int64 option", map[string]any{"option": int64(-7)}, "-7", 1},
		{"uint option", map[string]any{"option": uint(3)}, "3", 1},
		{"uint64 option", map[string]any{"option": uint64(math.MaxUint64)}, "18446744073709551615", 1},
		{"float option", map[string]any{"option": 2.5}, "2.5", 1},
		{"whole float option matches the int", map[string]any{"option": 2.0}, "2", 1},
		{"float32 option", map[string]any{"option": float32(0.1)}, "0.1", 1},
		{"json.Number option", map[string]any{"option": json.Number("2")}, "2", 1},
		{"bool option", map[string]any{"option": true}, "true", 1},
		{"null option abstains", map[string]any{"option": nil}, "", 1},
		{"map option abstains", map[string]any{"option": map[string]any{"a": 1}}, "", 1},
		{"list option abstains", map[string]any{"option": []any{"a"}}, "", 1},
		{"empty string option abstains", map[string]any{"option": ""}, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			option, confidence := merge.OptionOf(tc.result)
			if option != tc.option {
				t.Errorf("option: got %q, want %q", option, tc.option)
			}
			if math.Abs(confidence-tc.confidence) > 1e-7 {
				t.Errorf("confidence: got %v, want %v", confidence, tc.confidence)
			}
		})
	}
}

func TestDecisionMap(t *testing.T) {
	replies := []merge.Reply{rc("flight", "A", 0.7), rc("hotel", "B", 0.9), rc("car", "B", 0.6)}
	t.Run("weighted_vote", func(t *testing.T) {
		d, err := merge.Decide(merge.WeightedVote, replies, travel)
		if err != nil {
			t.Fatalf("Decide: got error %v, want nil", err)
		}
		m := d.Map()
		if len(m) != 6 {
			t.Errorf("keys: got %d (%v), want 6", len(m), m)
		}
		checkMapValue(t, m, "strategy", "weighted_vote")
		checkMapValue(t, m, "option", "B")
		checkMapValue(t, m, "conflict", true)
		checkMapValue(t, m, "resolved", true)
		votes, ok := m["votes"].(map[string]any)
		if !ok {
			t.Fatalf("votes: got %T, want map[string]any", m["votes"])
		}
		if b, _ := votes["B"].(float64); math.Abs(b-1.27) > 1e-12 {
			t.Errorf("votes[B]: got %v, want 1.27", votes["B"])
		}
		weights, ok := m["weights"].(map[string]any)
		if !ok || len(weights) != 3 {
			t.Fatalf("weights: got %#v, want a map[string]any of 3 agents", m["weights"])
		}
		if w, _ := weights["flight"].(float64); math.Abs(w-0.82) > 1e-12 {
			t.Errorf("weights[flight]: got %v, want 0.82", weights["flight"])
		}
		votes["B"] = 0.0
		weights["car"] = 9.0
		if d.Votes["B"] == 0 || d.Weights["car"] == 9 {
			t.Errorf("mutating the map changed the decision: got votes %v weights %v", d.Votes, d.Weights)
		}
		if _, err := json.Marshal(m); err != nil {
			t.Errorf("json.Marshal: got error %v, want nil", err)
		}
	})
	t.Run("unresolved majority", func(t *testing.T) {
		d, err := merge.Decide(merge.Majority, []merge.Reply{r("a", "X"), r("b", "Y")}, nil)
		if err != nil {
			t.Fatalf("Decide: got error %v, want nil", err)
		}
		got, err := json.Marshal(d.Map())
		if err != nil {
			t.Fatalf("json.Marshal: got error %v, want nil", err)
		}
		want := `{"conflict":true,"option":"","resolved":false,"strategy":"majority","votes":{"X":1,"Y":1}}`
		if string(got) != want {
			t.Errorf("JSON: got %s, want %s", got, want)
		}
	})
	t.Run("zero decision", func(t *testing.T) {
		m := merge.Decision{Strategy: merge.WeightedVote}.Map()
		for _, k := range []string{"votes", "weights"} {
			v, ok := m[k].(map[string]any)
			if !ok || v == nil {
				t.Errorf("%s: got %#v, want an empty, non-nil map[string]any", k, m[k])
			}
		}
	})
}

func checkMapValue(t *testing.T, m map[string]any, key string, want any) {
	t.Helper()
	if got := m[key]; got != want {
		t.Errorf("%s: got %#v, want %#v", key, got, want)
	}
}
