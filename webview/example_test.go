package webview_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/webview"
)

// A Go program mounts the view on its own engine and store: the Local
// backend observes the engine for live updates and reads the store.
func ExampleNewLocal() {
	w, _ := rules.Parse("greet.yaml", []byte(`workflow: greet
initial: WRITING
agents:
  writer: {}
states:
  WRITING: {agent: writer}
  DONE: {terminal: true}
rules:
  - {id: written, from: writer, trigger: written, next: DONE}
`))
	reg, _ := engine.NewRegistry(w, map[string]registry.Handler{
		"writer": registry.HandlerFunc(func(ctx context.Context, t *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "written"}, nil
		}),
	})
	store := record.NewMemStore()
	view := webview.NewLocal(store)
	eng, _ := engine.New(w, reg, engine.WithStore(store), engine.WithObserver(view.Observer()))
	defer eng.Close()
	view.Add(eng)

	mux := http.NewServeMux()
	mux.Handle("/ops/", webview.New(view, webview.WithBase("/ops/")))
	srv := httptest.NewServer(mux) // a program would use http.ListenAndServe
	defer srv.Close()
	defer view.Close() // ends the view's event streams, so that the server can close

	inst, _ := eng.StartID(context.Background(), "greet-1", nil)
	_, _ = inst.Wait(context.Background())
	resp, _ := http.Get(srv.URL + "/ops/instances/greet-1")
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.Contains(string(page), "class DONE current"))
	// Output: 200 true
}
