package main

import (
	"encoding/json"
	"testing"
)

func TestAnswer_RoutesByTheSystemPrompt(t *testing.T) {
	tests := []struct {
		name, system, user, trigger string
		result                      map[string]any
	}{
		{"research", triageSystem, "Question: Why is the sky blue?", "research", map[string]any{"topic": "why is the sky blue"}},
		{"off topic", triageSystem, "Question: Can you book a table?", "off_topic", map[string]any{"topic": "can you book a table"}},
		{"draft", writerSystem, "Question: Q?\nFindings: F.\nFacts: [x]\nFeedback: none", "drafted", map[string]any{"draft": "Q? F. Facts: [x]"}},
		{"revision", writerSystem, "Question: Q?\nFindings: F.\nFacts: [x]\nFeedback: shorter", "drafted", map[string]any{"draft": "Revised (shorter): Q? F. Facts: [x]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content, err := answer(tt.system, tt.user)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Trigger string         `json:"trigger"`
				Result  map[string]any `json:"result"`
			}
			if err := json.Unmarshal([]byte(content), &got); err != nil {
				t.Fatal(err)
			}
			if got.Trigger != tt.trigger || got.Result["topic"] != tt.result["topic"] || got.Result["draft"] != tt.result["draft"] {
				t.Fatalf("got %s, want trigger %s and result %v", content, tt.trigger, tt.result)
			}
		})
	}
}

func TestAnswer_UnknownSystemPromptIsAnError(t *testing.T) {
	if _, err := answer("You are a pirate.", "Question: ?"); err == nil {
		t.Fatal("got no error, want one")
	}
}
