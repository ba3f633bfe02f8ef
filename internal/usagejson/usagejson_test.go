package usagejson_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/batonhq/baton/internal/jsonv"
	"github.com/batonhq/baton/internal/usagejson"
	"github.com/batonhq/baton/registry"
)

// requireAsJSON checks that Append writes what json.Marshal writes for u,
// or refuses what it refuses, and that Decode reads it back as
// json.Unmarshal does.
func requireAsJSON(t *testing.T, u registry.Usage) {
	t.Helper()
	want, werr := json.Marshal(u)
	got, ok := usagejson.Append(nil, u)
	if !ok {
		if werr == nil {
			t.Fatalf("Append refused %+v, json.Marshal wrote %s", u, want)
		}
		return
	}
	if werr != nil || string(got) != string(want) {
		t.Fatalf("Append wrote %s (json.Marshal: %s, %v)", got, want, werr)
	}
	d := jsonv.NewDecoder(got)
	back := usagejson.Decode(d)
	d.End()
	var ref registry.Usage
	if err := json.Unmarshal(got, &ref); err != nil || !d.OK() || back != ref {
		t.Fatalf("Decode read %+v (ok %v) from %s, json.Unmarshal %+v (%v)", back, d.OK(), got, ref, err)
	}
}

func TestAppendAndDecode_AsEncodingJSON(t *testing.T) {
	for _, u := range []registry.Usage{
		{},
		{InputTokens: 1},
		{OutputTokens: -2, Model: "gpt-<4>\u2028"},
		{InputTokens: 10, OutputTokens: 20, Cost: 0.000001, Model: "m"},
		{Cost: 1e21},
		{Cost: math.NaN()},
		{Cost: math.Inf(-1)},
	} {
		requireAsJSON(t, u)
	}
}

func FuzzAppendAndDecode(f *testing.F) {
	f.Add(int64(1), int64(2), 0.5, "m")
	f.Add(int64(0), int64(0), 0.0, "")
	f.Fuzz(func(t *testing.T, in, out int64, cost float64, model string) {
		requireAsJSON(t, registry.Usage{InputTokens: in, OutputTokens: out, Cost: cost, Model: model})
	})
}
