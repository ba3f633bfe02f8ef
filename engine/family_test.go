package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/rules"
)

// familyEngine builds the engine of w, one of fam, its agents answering
// with the replies given by agent id.
func familyEngine(t *testing.T, w *rules.Workflow, fam *engine.Family, store record.Store, replies map[string]registry.Outcome) *engine.Engine {
	t.Helper()
	hs := map[string]registry.Handler{}
	for _, a := range w.Agents {
		out := replies[a.ID]
		hs[a.ID] = registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) { return out, nil })
	}
	reg, err := engine.NewRegistry(w, hs)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := newEngine(w, reg, engine.WithStore(store), engine.WithFamily(fam))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

// In a Family, engines built apart run one another's children: a
// workflow state starts its child on the engine the family's owner names
// current, a version the parent was never linked to.
func TestFamily_ChildStartsOnTheCurrentEngine(t *testing.T) {
	parent, err := rules.Load(filepath.Join("testdata", "child", "onboarding.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("testdata", "child", "kyc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	v1, err := rules.Parse("kyc.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := rules.Parse("kyc.yaml", []byte(strings.Replace(string(src), "workflow: kyc\n", "workflow: kyc\nversion: 2\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := rules.Link(parent, func(string) (*rules.Workflow, bool) { return v1, true }); err != nil {
		t.Fatal(err)
	}
	var current *engine.Engine
	fam := engine.NewFamily(func(name string) *engine.Engine {
		if name == "kyc" {
			return current
		}
		return nil
	})
	store := record.NewMemStore()
	ok := registry.Outcome{Trigger: "ok", Result: map[string]any{"level": "high"}}
	familyEngine(t, v1, fam, store, map[string]registry.Outcome{"checker": ok})
	current = familyEngine(t, v2, fam, store, map[string]registry.Outcome{"checker": ok})
	eng := familyEngine(t, parent, fam, store, map[string]registry.Outcome{
		"signup":   {Trigger: "signed", Result: map[string]any{"customer": "c-1"}},
		"welcomer": {Trigger: "welcomed"},
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := eng.StartID(ctx, "p-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait(ctx)
	if err != nil || res.Outcome != "DONE" {
		t.Fatalf("got %s %s (%v), want completed DONE", res.Status, res.Outcome, err)
	}
	snap, err := store.Instance(ctx, "p-1/KYC/1")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Hash != v2.Hash {
		t.Errorf("got the child on hash %s, want version 2's %s", snap.Hash, v2.Hash)
	}
}
