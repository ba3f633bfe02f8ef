package webview_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/webview"
)

// deskFlow: the writer writes (its result is the input's text), then the
// instance waits for a person's signal. Input mode "hold" keeps the writer
// at work until the test ends, so that its step can be handed to the boss;
// mode "stream" keeps it at work until the test sends its outcome on
// fixture.answer.
const deskFlow = `workflow: desk
version: 2
description: A request written, then approved by a person
initial: WRITING
agents:
  writer: {}
  boss: {selectable: true}
states:
  WRITING: {agent: writer}
  APPROVAL: {wait: {signals: [approve, reject]}, timeout: 1h}
  DONE: {terminal: true}
  REJECTED: {terminal: true}
rules:
  - {id: written, from: writer, trigger: written, next: APPROVAL, context: {text: result.text}}
  - {id: approve, from: APPROVAL, trigger: approve, next: DONE}
  - {id: reject, from: APPROVAL, trigger: reject, next: REJECTED}
`

// fixture is a Go program's engine and store with the view mounted on an
// httptest server.
type fixture struct {
	t     testing.TB
	eng   *engine.Engine
	store *record.MemStore
	local *webview.Local
	http  *httptest.Server
	base  string
	// answer ends a writer's run in mode "stream" with the outcome sent.
	answer chan<- registry.Outcome
}

func newFixture(t testing.TB, opts ...webview.Option) *fixture {
	t.Helper()
	w, err := rules.Parse("desk.yaml", []byte(deskFlow))
	require.NoError(t, err)
	release := make(chan struct{})
	answer := make(chan registry.Outcome)
	writer := registry.HandlerFunc(func(ctx context.Context, task *registry.Task) (registry.Outcome, error) {
		if task.Input["mode"] == "stream" {
			select {
			case out := <-answer:
				return out, nil
			case <-release:
			case <-ctx.Done():
			}
			return registry.Outcome{}, ctx.Err()
		}
		if task.Input["mode"] == "hold" {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return registry.Outcome{}, ctx.Err()
		}
		if task.Input["mode"] == "fail" {
			return registry.Outcome{}, registry.Permanent(errors.New("the model answered 503 three times"))
		}
		text, _ := task.Input["text"].(string)
		return registry.Outcome{Trigger: "written", Result: map[string]any{"text": text}}, nil
	})
	boss := registry.HandlerFunc(func(ctx context.Context, task *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: "written", Result: map[string]any{"text": "by the boss"}}, nil
	})
	reg, err := engine.NewRegistry(w, map[string]registry.Handler{"writer": writer, "boss": boss})
	require.NoError(t, err)
	store := record.NewMemStore()
	local := webview.NewLocal(store)
	eng, err := engine.New(w, reg, engine.WithStore(store), engine.WithObserver(local.Observer()))
	require.NoError(t, err)
	local.Add(eng)
	opts = append([]webview.Option{webview.WithBase("/ui/"), webview.WithRefresh(5 * time.Millisecond)}, opts...)
	mux := http.NewServeMux()
	mux.Handle("/ui/", webview.New(local, opts...))
	hs := httptest.NewServer(mux)
	f := &fixture{t: t, eng: eng, store: store, local: local, http: hs, base: hs.URL + "/ui/", answer: answer}
	t.Cleanup(func() {
		close(release)
		local.Close() // ends the event streams, so that the server can close
		hs.Close()
		_ = eng.Close()
	})
	return f
}

// in is the fixture reporting to t (a fuzz target's own T).
func (f *fixture) in(t testing.TB) *fixture {
	c := *f
	c.t = t
	return &c
}

// start starts an instance and waits until its first step is over (or,
// in hold mode, under way).
func (f *fixture) start(id string, input map[string]any) string {
	f.t.Helper()
	var (
		h   *engine.Instance
		err error
	)
	if id == "" {
		h, err = f.eng.Start(context.Background(), input)
	} else {
		h, err = f.eng.StartID(context.Background(), id, input)
	}
	require.NoError(f.t, err)
	return h.ID()
}

// waitState polls the store until the instance is in state (bounded).
func (f *fixture) waitState(id, state string) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap, err := f.store.Instance(context.Background(), id)
		if err == nil && snap.State == state {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("instance %s: state %q, want %s (err %v)", id, snap.State, state, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// get fetches a page of the view (path relative to the view's base).
func (f *fixture) get(path string, hdr ...string) (int, string, http.Header) {
	f.t.Helper()
	req, err := http.NewRequest("GET", f.base+path, nil)
	require.NoError(f.t, err)
	for k := 0; k+1 < len(hdr); k += 2 {
		req.Header.Add(hdr[k], hdr[k+1])
	}
	return f.do(req)
}

// post sends a form to the view.
func (f *fixture) post(path string, form url.Values, hdr ...string) (int, string, http.Header) {
	f.t.Helper()
	req, err := http.NewRequest("POST", f.base+path, strings.NewReader(form.Encode()))
	require.NoError(f.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k := 0; k+1 < len(hdr); k += 2 {
		req.Header.Add(hdr[k], hdr[k+1])
	}
	return f.do(req)
}

// do sends req without following redirects.
func (f *fixture) do(req *http.Request) (int, string, http.Header) {
	f.t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	return resp.StatusCode, string(body), resp.Header
}
