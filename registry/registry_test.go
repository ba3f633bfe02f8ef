package registry_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/batonhq/baton/registry"
)

func refundAgents() []registry.Agent {
	return []registry.Agent{
		{ID: "customer", Type: "support"},
		{ID: "seller", Type: "merchant", Capabilities: []string{"approve_refund"}},
		{ID: "payment", Type: "finance", Capabilities: []string{"refund", "charge"}, Queue: 1000},
		{ID: "notification", Type: "messaging", Selectable: true},
		{ID: "supervisor", Type: "system", System: true},
		{ID: "ledger", Type: "finance", Capabilities: []string{"refund"}},
	}
}

func mustRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	r, err := registry.FromSpecs(refundAgents())
	if err != nil {
		t.Fatalf("FromSpecs: %v", err)
	}
	return r
}

func ids(agents []registry.Agent) []string {
	out := make([]string, len(agents))
	for i, a := range agents {
		out[i] = a.ID
	}
	return out
}

func TestRegistry_Get(t *testing.T) {
	r := mustRegistry(t)
	a, err := r.Get("payment")
	if err != nil {
		t.Fatalf("Get(payment): %v", err)
	}
	if a.Type != "finance" || a.Queue != 1000 || !a.HasCapability("refund") || a.HasCapability("approve_refund") {
		t.Errorf("Get(payment) = %+v, want the finance agent with queue 1000 and capability refund", a)
	}
	if !a.External() {
		t.Errorf("External() = false for an agent without handler, want true")
	}
}

func TestRegistry_Get_UnknownSuggests(t *testing.T) {
	r := mustRegistry(t)
	tests := []struct {
		id, want, msg string
	}{
		{"paymnt", "payment", `registry: unknown agent "paymnt" (did you mean "payment"?)`},
		{"Seller", "seller", `registry: unknown agent "Seller" (did you mean "seller"?)`},
		{"supervisr", "supervisor", `registry: unknown agent "supervisr" (did you mean "supervisor"?)`},
		{"warehouse", "", `registry: unknown agent "warehouse"`},
		{"", "", `registry: unknown agent ""`},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			_, err := r.Get(tt.id)
			if !errors.Is(err, registry.ErrUnknownAgent) {
				t.Fatalf("Get(%q) error = %v, want ErrUnknownAgent", tt.id, err)
			}
			var ue *registry.UnknownAgentError
			if !errors.As(err, &ue) {
				t.Fatalf("Get(%q) error %T, want *UnknownAgentError", tt.id, err)
			}
			if ue.ID != tt.id || ue.Suggestion != tt.want {
				t.Errorf("got ID %q suggestion %q, want %q and %q", ue.ID, ue.Suggestion, tt.id, tt.want)
			}
			if err.Error() != tt.msg {
				t.Errorf("got message %q, want %q", err.Error(), tt.msg)
			}
			if got := r.Suggest(tt.id); got != tt.want {
				t.Errorf("Suggest(%q) = %q, want %q", tt.id, got, tt.want)
			}
		})
	}
}

func TestRegistry_Lookups(t *testing.T) {
	r := mustRegistry(t)
	tests := []struct {
		name string
		got  []registry.Agent
		want []string
	}{
		{"All", r.All(), []string{"customer", "ledger", "notification", "payment", "seller", "supervisor"}},
		{"ByType finance", r.ByType("finance"), []string{"ledger", "payment"}},
		{"ByType unknown", r.ByType("booking"), []string{}},
		{"ByCapability refund", r.ByCapability("refund"), []string{"ledger", "payment"}},
		{"ByCapability approve_refund", r.ByCapability("approve_refund"), []string{"seller"}},
		{"ByCapability none", r.ByCapability("fly"), []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ids(tt.got); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if got, want := r.IDs(), ids(r.All()); !slices.Equal(got, want) {
		t.Errorf("IDs() = %v, want %v", got, want)
	}
	if r.Len() != 6 || !r.Has("ledger") || r.Has("ledgr") {
		t.Errorf("Len/Has: got %d %v %v, want 6 true false", r.Len(), r.Has("ledger"), r.Has("ledgr"))
	}
}

func TestRegistry_ResultsAreCopies(t *testing.T) {
	r := mustRegistry(t)
	all := r.All()
	all[0].ID = "mutated"
	byType := r.ByType("finance")
	byType[0] = registry.Agent{ID: "mutated"}
	if got := r.IDs()[0]; got != "customer" {
		t.Errorf("after mutating All's result, first id = %q, want customer", got)
	}
	if got := ids(r.ByType("finance")); !slices.Equal(got, []string{"ledger", "payment"}) {
		t.Errorf("after mutating ByType's result, got %v, want [ledger payment]", got)
	}
}

func TestRegistry_AddCopiesCapabilities(t *testing.T) {
	r := registry.New()
	caps := []string{"refund"}
	if err := r.Add(registry.Agent{ID: "payment", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	caps[0] = "charge"
	a, _ := r.Get("payment")
	if !a.HasCapability("refund") || a.HasCapability("charge") {
		t.Errorf("got capabilities %v after caller mutation, want [refund]", a.Capabilities)
	}
}

func TestRegistry_AddInvalid(t *testing.T) {
	tests := []struct {
		name  string
		agent registry.Agent
		field string
		msg   string
	}{
		{"empty id", registry.Agent{}, "id", `registry: agent "": id is required`},
		{"space in id", registry.Agent{ID: "pay ment"}, "id", `registry: agent "pay ment": id must not contain spaces or control characters`},
		{"broadcast id", registry.Agent{ID: "*"}, "id", `registry: agent "*": id must not be "*" or start with "topic:" (bus addresses)`},
		{"topic id", registry.Agent{ID: "topic:alerts"}, "id", `registry: agent "topic:alerts": id must not be "*" or start with "topic:" (bus addresses)`},
		{"negative queue", registry.Agent{ID: "a", Queue: -1}, "queue", `registry: agent "a": queue must not be negative`},
		{"expertise above 1", registry.Agent{ID: "a", Expertise: 1.5}, "expertise", `registry: agent "a": expertise must be between 0 and 1`},
		{"accuracy NaN", registry.Agent{ID: "a", Accuracy: math.NaN()}, "accuracy", `registry: agent "a": accuracy must be between 0 and 1`},
		{"empty capability", registry.Agent{ID: "a", Capabilities: []string{"x", ""}}, "capabilities", `registry: agent "a": capabilities must not contain an empty name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := registry.New()
			err := r.Add(tt.agent)
			var ae *registry.AgentError
			if !errors.As(err, &ae) || !errors.Is(err, registry.ErrInvalidAgent) {
				t.Fatalf("Add error = %v, want *AgentError matching ErrInvalidAgent", err)
			}
			if ae.Field != tt.field || err.Error() != tt.msg {
				t.Errorf("got field %q message %q, want %q and %q", ae.Field, err.Error(), tt.field, tt.msg)
			}
			if r.Len() != 0 {
				t.Errorf("Len() = %d after a refused Add, want 0", r.Len())
			}
		})
	}
}

func TestRegistry_Duplicate(t *testing.T) {
	r := mustRegistry(t)
	err := r.Add(registry.Agent{ID: "seller"})
	var de *registry.DuplicateAgentError
	if !errors.As(err, &de) || de.ID != "seller" || !errors.Is(err, registry.ErrDuplicateAgent) {
		t.Fatalf("Add(seller) error = %v, want *DuplicateAgentError for seller", err)
	}
	if got, want := err.Error(), `registry: duplicate agent "seller"`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFromSpecs_ReportsEveryProblem(t *testing.T) {
	specs := []registry.Agent{{ID: "a"}, {ID: "a"}, {ID: "b", Queue: -3}, {ID: ""}, {ID: "c"}}
	r, err := registry.FromSpecs(specs)
	if r != nil {
		t.Errorf("FromSpecs returned a registry with an error")
	}
	var dup *registry.DuplicateAgentError
	var inv *registry.AgentError
	if !errors.As(err, &dup) || !errors.As(err, &inv) {
		t.Fatalf("error = %v, want both a duplicate and an invalid agent", err)
	}
	want := "registry: duplicate agent \"a\"\nregistry: agent \"b\": queue must not be negative\nregistry: agent \"\": id is required"
	if err.Error() != want {
		t.Errorf("got %q, want %q", err.Error(), want)
	}
}

func TestRegistry_AddAllIsAtomic(t *testing.T) {
	r := mustRegistry(t)
	err := r.AddAll(registry.Agent{ID: "fresh"}, registry.Agent{ID: "payment"})
	if !errors.Is(err, registry.ErrDuplicateAgent) {
		t.Fatalf("AddAll error = %v, want ErrDuplicateAgent", err)
	}
	if r.Has("fresh") {
		t.Errorf("fresh was added although the batch failed")
	}
	if err := r.AddAll(); err != nil {
		t.Errorf("AddAll() = %v, want nil", err)
	}
}

func TestRegistry_SetHandler(t *testing.T) {
	r := mustRegistry(t)
	h := registry.HandlerFunc(func(ctx context.Context, task *registry.Task) (registry.Outcome, error) {
		return registry.Outcome{Trigger: "refunded", Result: map[string]any{"order": task.Context["order_id"]}}, nil
	})
	if err := r.SetHandler("payment", h); err != nil {
		t.Fatal(err)
	}
	a, _ := r.Get("payment")
	if a.External() {
		t.Fatalf("payment still external after SetHandler")
	}
	out, err := a.Handler.Handle(context.Background(), &registry.Task{Context: map[string]any{"order_id": "12345"}})
	if err != nil || out.Trigger != "refunded" || out.Result["order"] != "12345" {
		t.Errorf("Handle = %+v, %v, want trigger refunded with order 12345", out, err)
	}
	if fin := r.ByType("finance"); fin[1].Handler == nil {
		t.Errorf("ByType does not see the new handler")
	}
	if err := r.SetHandler("paymnt", h); !errors.Is(err, registry.ErrUnknownAgent) {
		t.Errorf("SetHandler(paymnt) = %v, want ErrUnknownAgent", err)
	}
	if err := r.SetHandler("payment", nil); err != nil {
		t.Fatal(err)
	}
	if a, _ := r.Get("payment"); !a.External() {
		t.Errorf("payment has a handler after SetHandler(nil)")
	}
}

func TestRegistry_WithOnAdd(t *testing.T) {
	var got []string
	r := registry.New(registry.WithOnAdd(func(a registry.Agent) { got = append(got, a.ID) }))
	if err := r.AddAll(registry.Agent{ID: "b"}, registry.Agent{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	_ = r.Add(registry.Agent{ID: "a"}) // duplicate: no callback
	if !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("callbacks for %v, want [b a]", got)
	}
}

func TestRegistry_ConcurrentReadersAndWriters(t *testing.T) {
	r := mustRegistry(t)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				_ = r.Add(registry.Agent{ID: fmt.Sprintf("w%d-%d", w, i), Type: "worker"})
				_ = r.SetHandler("payment", registry.HandlerFunc(nil))
			}
		})
	}
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if _, err := r.Get("payment"); err != nil {
					t.Errorf("Get(payment) during writes: %v", err)
					return
				}
				_ = r.ByType("worker")
				_ = r.ByCapability("refund")
			}
		})
	}
	wg.Wait()
	if got := len(r.ByType("worker")); got != 200 {
		t.Errorf("got %d workers, want 200", got)
	}
}

func BenchmarkGet(b *testing.B) {
	r := mustRegistry(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Get("payment"); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRegistry_SuggestDistance(t *testing.T) {
	r, err := registry.FromSpecs([]registry.Agent{{ID: "flight"}, {ID: "hotel"}, {ID: "car"}, {ID: "error_monitor"}, {ID: "café"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ id, want string }{
		{"flght", "flight"},
		{"hotle", "hotel"},
		{"cat", "car"},
		{"ca", "car"},
		{"c", ""},
		{"erorr_monitor", "error_monitor"},
		{"error-monitr", "error_monitor"},
		{"errmon", ""},
		{"cafe", "café"},
		{"train", ""},
	}
	for _, tt := range tests {
		if got := r.Suggest(tt.id); got != tt.want {
			t.Errorf("Suggest(%q) = %q, want %q", tt.id, got, tt.want)
		}
	}
}

func FuzzAdd(f *testing.F) {
	f.Add("payment", "finance", "refund", 10, 0.5)
	f.Add("", "", "", -1, 2.0)
	f.Add("topic:x", "t", "", 0, 0.0)
	f.Fuzz(func(t *testing.T, id, typ, capability string, queue int, weight float64) {
		r := mustRegistry(t)
		err := r.Add(registry.Agent{ID: id, Type: typ, Capabilities: []string{capability}, Queue: queue, Expertise: weight})
		if err != nil {
			if !errors.Is(err, registry.ErrInvalidAgent) && !errors.Is(err, registry.ErrDuplicateAgent) {
				t.Fatalf("Add error %v is neither invalid nor duplicate", err)
			}
			_ = r.Suggest(id)
			return
		}
		a, err := r.Get(id)
		if err != nil || a.ID != id {
			t.Fatalf("Get(%q) after Add = %+v, %v", id, a, err)
		}
	})
}
