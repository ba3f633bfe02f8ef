// Command fakellm is a tiny OpenAI-compatible chat completions server for
// running the research example offline: it answers POST /v1/chat/completions
// with a fixed, deterministic answer chosen by the request's system prompt
// (the triage model's and the writer's), in the strict JSON the agents ask
// for, with token counts in its usage. Any other system prompt is a 400.
//
//	fakellm --addr 127.0.0.1:9300 [--key KEY]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fakellm:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakellm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9300", "the address to listen on")
	key := fs.String("key", "", "the API key requests must carry as a bearer token (none: any)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler(*key), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "fakellm: listening on http://%s/v1\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// request is the part of a chat completions request fakellm reads.
type request struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

func handler(key string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
			fail(w, http.StatusUnauthorized, "invalid API key")
			return
		}
		var req request
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
			fail(w, http.StatusBadRequest, "the body is not JSON: "+err.Error())
			return
		}
		var system, user string
		for _, m := range req.Messages {
			switch m.Role {
			case "system":
				system = m.Content
			case "user":
				user = m.Content
			}
		}
		content, err := answer(system, user)
		if err != nil {
			fail(w, http.StatusBadRequest, err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		prompt, completion := words(system)+words(user), words(content)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
			"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
		})
	})
	return mux
}

// The system prompts of the example's two model agents.
const (
	triageSystem = "You triage research questions."
	writerSystem = "You write short research answers."
)

// answer is the model's message content for a system and a user prompt:
// the triage model routes a question that asks to book something off
// topic and every other one to research, its topic the question in lower
// case; the writer drafts from the findings and the facts of its prompt.
func answer(system, user string) (string, error) {
	switch system {
	case triageSystem:
		question := strings.TrimSpace(strings.TrimPrefix(user, "Question: "))
		topic := strings.ToLower(strings.TrimRight(question, "?!. "))
		trigger := "research"
		if strings.Contains(topic, "book ") {
			trigger = "off_topic"
		}
		return encode(trigger, map[string]any{"topic": topic})
	case writerSystem:
		lines := map[string]string{}
		for _, l := range strings.Split(user, "\n") {
			if k, v, ok := strings.Cut(l, ": "); ok {
				lines[k] = v
			}
		}
		draft := fmt.Sprintf("%s %s Facts: %s", lines["Question"], lines["Findings"], lines["Facts"])
		if fb := lines["Feedback"]; fb != "" && fb != "none" {
			draft = "Revised (" + fb + "): " + draft
		}
		return encode("drafted", map[string]any{"draft": draft})
	}
	return "", fmt.Errorf("fakellm has no answer for the system prompt %q", system)
}

func encode(trigger string, result map[string]any) (string, error) {
	b, err := json.Marshal(map[string]any{"trigger": trigger, "result": result})
	return string(b), err
}

func words(s string) int { return len(strings.Fields(s)) }

func fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}
