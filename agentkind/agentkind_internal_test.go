package agentkind

import (
	"context"
	"errors"
	"testing"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// closing is a handler that holds something open, as a stdio MCP server
// does.
type closing struct{ closed int }

func (c *closing) Handle(context.Context, *registry.Task) (registry.Outcome, error) {
	return registry.Outcome{}, nil
}

func (c *closing) Close() error { c.closed++; return errors.New("closed") }

const twoHTTPAgents = `
workflow: two
initial: A
agents:
  a: {url: "http://127.0.0.1:1/a"}
  b: {url: "http://127.0.0.1:1/b", secret_env: B_SECRET}
states: {A: {agent: a}, B: {agent: b}, Z: {terminal: true}}
rules:
  - {id: r1, from: a, trigger: ok, next: B}
  - {id: r2, from: b, trigger: ok, next: Z}
`

// withClosingHTTP makes every HTTP agent a closing handler for the test.
func withClosingHTTP(t *testing.T) *[]*closing {
	built := &[]*closing{}
	orig := builders[rules.KindHTTP]
	builders[rules.KindHTTP] = func(w *rules.Workflow, a *rules.Agent, o *options) (registry.Handler, error) {
		if _, err := o.env(a.ID, "secret_env", a.SecretEnv); err != nil {
			return nil, err
		}
		c := &closing{}
		*built = append(*built, c)
		return c, nil
	}
	t.Cleanup(func() { builders[rules.KindHTTP] = orig })
	return built
}

func TestSet_Close_ClosesEachHandlerOnce(t *testing.T) {
	built := withClosingHTTP(t)
	w, err := rules.Parse("two.yaml", []byte(twoHTTPAgents))
	if err != nil {
		t.Fatal(err)
	}
	set, err := Handlers(w, WithLookupEnv(func(string) (string, bool) { return "s", true }))
	if err != nil {
		t.Fatal(err)
	}
	first, second := set.Close(), set.Close()
	if first == nil || first != second {
		t.Errorf("got %v then %v, want the handlers' error both times", first, second)
	}
	for i, c := range *built {
		if c.closed != 1 {
			t.Errorf("handler %d closed %d times, want 1", i, c.closed)
		}
	}
}

func TestHandlers_ClosesWhatItBuiltOnError(t *testing.T) {
	built := withClosingHTTP(t)
	w, err := rules.Parse("two.yaml", []byte(twoHTTPAgents))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Handlers(w, WithLookupEnv(func(string) (string, bool) { return "", false }))
	if !errors.Is(err, ErrMissingEnv) {
		t.Fatalf("got %v, want ErrMissingEnv", err)
	}
	if len(*built) != 1 || (*built)[0].closed != 1 {
		t.Errorf("got %d handlers built, first closed %d times; want 1 built and closed", len(*built), (*built)[0].closed)
	}
}
