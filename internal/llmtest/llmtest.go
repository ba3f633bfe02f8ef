// Package llmtest is an OpenAI-compatible chat completions server for
// tests: a real HTTP server on 127.0.0.1 that checks each request's shape
// (the bearer key, a strict json_schema response format) and answers what
// the test says.
package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Request is one chat completions request as the server read it.
type Request struct {
	Model       string
	System      string // the system message, "" for none
	User        string // the user message
	Temperature *float64
	// Schema is the response format's JSON Schema.
	Schema map[string]any
	// Header is the request's header.
	Header http.Header
}

// Reply is what the server answers one request.
type Reply struct {
	// Status is the HTTP status (default 200).
	Status int
	// Content is the model's message content of a 200.
	Content string
	// Body, when set, is sent as it is instead of a chat completion or an
	// error object.
	Body string
	// Message is the error message of a status other than 200.
	Message string
	// Hang makes the server never answer: it waits until the client gives
	// up.
	Hang bool
	// PromptTokens and CompletionTokens are the usage reported.
	PromptTokens, CompletionTokens int64
	// Model is the answering model (default: the requested one).
	Model string
}

// Server is a running OpenAI-compatible server.
type Server struct {
	// BaseURL is what an agent's base URL is set to (".../v1").
	BaseURL string
	// Key is the API key the server expects ("" for none).
	Key string

	srv    *httptest.Server
	answer func(Request) Reply
	mu     sync.Mutex
	reqs   []Request
}

// Start starts a server expecting key that answers each well-formed
// request with answer; the test's cleanup stops it.
func Start(t testing.TB, key string, answer func(Request) Reply) *Server {
	s := &Server{Key: key, answer: answer}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.BaseURL = s.srv.URL + "/v1"
	t.Cleanup(s.Close)
	return s
}

// Close stops the server, ending hanging calls.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Requests returns the well-formed requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// body is the part of a chat completions request the server reads.
type body struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Temperature    *float64 `json:"temperature"`
	ResponseFormat struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string         `json:"name"`
			Strict bool           `json:"strict"`
			Schema map[string]any `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		fail(w, http.StatusNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
		return
	}
	if s.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.Key {
		// Real APIs quote the key they were given; so does this one, to
		// prove the agent cleans it from what it reports.
		fail(w, http.StatusUnauthorized, "Incorrect API key provided: "+r.Header.Get("Authorization"))
		return
	}
	var b body
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		fail(w, http.StatusBadRequest, "the body is not JSON: "+err.Error())
		return
	}
	rf := b.ResponseFormat
	if rf.Type != "json_schema" || !rf.JSONSchema.Strict || rf.JSONSchema.Name == "" || rf.JSONSchema.Schema == nil {
		fail(w, http.StatusBadRequest, "response_format must be a strict, named json_schema")
		return
	}
	req := Request{Model: b.Model, Temperature: b.Temperature, Schema: rf.JSONSchema.Schema, Header: r.Header.Clone()}
	for _, m := range b.Messages {
		switch m.Role {
		case "system":
			req.System = m.Content
		case "user":
			req.User = m.Content
		}
	}
	if req.Model == "" || req.User == "" {
		fail(w, http.StatusBadRequest, "model and a user message are required")
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	rep := s.answer(req)
	if rep.Hang {
		<-r.Context().Done()
		return
	}
	if rep.Status == 0 {
		rep.Status = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	if rep.Body != "" {
		w.WriteHeader(rep.Status)
		_, _ = w.Write([]byte(rep.Body))
		return
	}
	if rep.Status != http.StatusOK {
		fail(w, rep.Status, rep.Message)
		return
	}
	model := rep.Model
	if model == "" {
		model = req.Model
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": rep.Content}}},
		"usage": map[string]any{"prompt_tokens": rep.PromptTokens, "completion_tokens": rep.CompletionTokens,
			"total_tokens": rep.PromptTokens + rep.CompletionTokens},
	})
}

func fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": nil, "param": nil}})
}

// Answer returns the content of an answer with trigger and result.
func Answer(trigger string, result map[string]any) string {
	data, _ := json.Marshal(map[string]any{"trigger": trigger, "result": result})
	return string(data)
}
