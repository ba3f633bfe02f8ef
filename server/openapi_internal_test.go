package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/record"
)

// TestOpenAPI_PathsEqualRoutes keeps the OpenAPI document and the router
// equal: every route is documented, and nothing else is.
func TestOpenAPI_PathsEqualRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openapi, &doc))
	assert.Equal(t, "3.1.0", doc.OpenAPI)
	var documented, routed []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	s := &Server{metrics: newMetrics(nil)}
	for _, rt := range s.table() {
		routed = append(routed, rt.method+" "+rt.path)
	}
	slices.Sort(documented)
	slices.Sort(routed)
	assert.Equal(t, routed, documented)
}

func FuzzDecodeStart(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"input":{"a":1}}`, `{"id":"x","version":2}`, `{"input":3}`, `{"id":""}`, `{"version":0}`,
		`{"input":{"n":1e400}}`, `[]`, `{"x":1}`, `{} {}`, `{"input":`, "", `null`, `{"input":null}`,
		"{\"id\":\"a\xffb\"}", `{"id":"a\ud800b"}`, `{"id":"\udc00"}`, `{"id":"\ud83d\ude00"}`, `{"id":".."}`, `{"id":"a\u0007"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, e := decodeStart(data)
		if e != nil {
			if e.Status != 400 || e.Code == "" || e.Message == "" {
				t.Fatalf("bad refusal %+v", e)
			}
			return
		}
		if req.ID != nil && record.CheckID(*req.ID) != nil {
			t.Fatalf("id %q passed: %v", *req.ID, record.CheckID(*req.ID))
		}
		if req.Version != nil && *req.Version < 1 {
			t.Fatal("a version below 1 passed")
		}
	})
}

func FuzzDecodeReport(f *testing.F) {
	for _, seed := range []string{
		`{"instance_id":"i","step":1,"agent":"a","trigger":"t","result":{}}`,
		`{"instance_id":"i","step":1,"agent":"a","error":{"message":"m","retryable":true,"kind":"k"}}`,
		`{"instance_id":"i","step":1,"agent":"a","reject":"busy"}`,
		`{"instance_id":"i","step":1,"agent":"a","handoff":{"to":"b","return_control":true}}`,
		`{"instance_id":"i","step":1,"agent":"a","heartbeat":true}`,
		`{"instance_id":"i","step":"1"}`, `{}`, `[`, "", `{"instance_id":"i","step":1,"agent":"a","trigger":"t","reject":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, e := decodeReport(data)
		if e != nil {
			if e.Status != 400 || e.Message == "" {
				t.Fatalf("bad refusal %+v", e)
			}
			return
		}
		if rep.InstanceID == "" || rep.Step < 1 || rep.Agent == "" {
			t.Fatalf("a report without its identity passed: %+v", rep)
		}
	})
}

func FuzzDecodeSignal(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"data":{"by":"ana"}}`, `{"data":null}`, `{"data":[1]}`, `{"data":"x"}`, `{"dat":{}}`, `{"data":{}} x`, "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, e := decodeSignal(data); e != nil && (e.Status != 400 || e.Code == "" || e.Message == "") {
			t.Fatalf("bad refusal %+v", e)
		}
	})
}

func FuzzDecodeSelect(f *testing.F) {
	for _, seed := range []string{
		`{"agent":"boss"}`, `{"agent":"boss","explanation":"away"}`, `{}`, `{"agent":""}`, `{"agent":1}`, `{"agent":"a","x":1}`, "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, e := decodeSelect(data)
		if e != nil {
			if e.Status != 400 || e.Code == "" || e.Message == "" {
				t.Fatalf("bad refusal %+v", e)
			}
			return
		}
		if req.Agent == "" {
			t.Fatal("a selection without an agent passed")
		}
	})
}
