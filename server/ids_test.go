package server_test

import (
	"context"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/server"
)

// modes are the stores a server runs on: NATS (embedded, on a free port)
// and bbolt.
var modes = []struct {
	name   string
	config func(*server.Config)
}{
	{"nats", func(c *server.Config) { c.NATSListen = anyPort }},
	{"bbolt", func(c *server.Config) { c.NATS, c.NATSListen = server.NoNATS, "" }},
}

// Every id the rules refuse is 400 naming id, on either store, and nothing
// starts; the longest id allowed starts, and after a restart its instance
// is resumed and finishes.
func TestServer_Start_IDRulesAndTheLongestIDAfterRestart(t *testing.T) {
	longest := strings.Repeat("é/.", record.MaxIDLen/4-1) + "abcd"
	require.Len(t, longest, record.MaxIDLen)
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			ag := newAgents(t)
			dir := workflowsDir(t, ag.srv.URL, map[string]string{"echo.yaml": echoFlow})
			data := t.TempDir()
			open := func() *fixture {
				cfg := server.Config{WorkflowsDir: dir, DataDir: data}
				mode.config(&cfg)
				s, err := server.New(context.Background(), cfg)
				require.NoError(t, err)
				t.Cleanup(func() { s.Close() })
				return &fixture{t: t, srv: s, http: newHTTP(t, s), agents: ag}
			}
			f := open()
			for _, tc := range []struct{ name, body string }{
				{"empty", `{"id": ""}`},
				{"one byte too long", `{"id": "` + longest + `x"}`},
				{"3,000 characters", `{"id": "` + strings.Repeat("x", 3000) + `"}`},
				{"40 KiB", `{"id": "` + strings.Repeat("x", 40<<10) + `"}`},
				{"bytes that are not UTF-8", "{\"id\": \"order-\xff\"}"},
				{"other bytes that are not UTF-8", "{\"id\": \"order-\xfe\"}"},
				{"a lone high surrogate", `{"id": "order-\ud800"}`},
				{"a lone low surrogate", `{"id": "order-\udc00"}`},
				{"a high surrogate before another escape", `{"id": "order-\ud800\u0041"}`},
				{"a control character", `{"id": "order\u0007"}`},
				{"a newline", `{"id": "order\n7"}`},
				{"dot", `{"id": "."}`},
				{"dot dot", `{"id": ".."}`},
			} {
				code, body := f.do("POST", "/v1/workflows/echo/instances", tc.body)
				require.Equal(t, 400, code, "%s: %v", tc.name, body)
				assert.Equal(t, "id", errorOf(t, body)["field"], tc.name)
				assert.Equal(t, "invalid_field", errorOf(t, body)["code"], tc.name)
			}
			assert.Equal(t, 0, f.count(), "a refused start changes nothing")

			// Ids that only look odd are taken as they are.
			for _, id := range []string{"order-\U0001F600", "order-\uFFFD", "..."} {
				code, body := f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": id})
				require.Equal(t, 201, code, "%q: %v", id, body)
				assert.Equal(t, id, body["id"])
			}
			code, body := f.do("POST", "/v1/workflows/echo/instances", `{"id": "order-\ud83d\ude00"}`)
			require.Equal(t, 200, code, "an escaped surrogate pair is the same id: %v", body)

			code, body = f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": longest})
			require.Equal(t, 201, code, "%v", body)
			assert.Equal(t, longest, body["id"])
			f.srv.Close()

			f = open()
			code, body = f.do("GET", "/readyz", nil)
			require.Equal(t, 200, code, "%v", body)
			assert.Equal(t, 4, f.count())
			code, body = f.do("GET", "/v1/instances/"+url.PathEscape(longest), nil)
			require.Equal(t, 200, code, "%v", body)
			assert.Equal(t, "running", body["status"])
			code, body = f.do("POST", "/v1/reports", map[string]any{"instance_id": longest, "step": 1, "agent": "worker", "trigger": "done"})
			require.Equal(t, 200, code)
			assert.Equal(t, true, body["ok"], "the instance was resumed: %v", body)
			f.waitStatus(url.PathEscape(longest), "completed")
		})
	}
}

// A request naming an instance by an id of any length, which no start
// accepts, is answered 404, and the server stays ready.
func TestServer_LongPathIDsLeaveTheServerReady(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t, mode.config)
			long := url.PathEscape(strings.Repeat("x", 5000))
			for _, rq := range []struct{ method, path string }{
				{"GET", "/v1/instances/" + long},
				{"GET", "/v1/instances/" + long + "/history"},
				{"POST", "/v1/instances/" + long + "/cancel"},
				{"POST", "/v1/instances/" + long + "/signals/go"},
			} {
				code, body := f.do(rq.method, rq.path, nil)
				require.Equal(t, 404, code, "%s %.40s: %v", rq.method, rq.path, body)
			}
			code, body := f.do("GET", "/readyz", nil)
			require.Equal(t, 200, code, "%v", body)
			code, body = f.do("POST", "/v1/workflows/echo/instances", nil)
			require.Equal(t, 201, code, "%v", body)
		})
	}
}

// A damaged record in the store (not JSON, or not of the id its subject
// names) does not keep the server from starting and resuming every other
// instance.
func TestServer_NATS_DamagedRecordsDoNotBlockResume(t *testing.T) {
	ag := newAgents(t)
	dir := workflowsDir(t, ag.srv.URL, map[string]string{"echo.yaml": echoFlow})
	data := t.TempDir()
	open := func() *fixture {
		s, err := server.New(context.Background(), server.Config{WorkflowsDir: dir, DataDir: data, NATSListen: anyPort})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return &fixture{t: t, srv: s, http: newHTTP(t, s), agents: ag}
	}
	f := open()
	code, body := f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": "good"})
	require.Equal(t, 201, code, "%v", body)
	nc, err := nats.Connect(f.srv.NATSURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	for subject, data := range map[string]string{
		"baton.step.0." + base64.RawURLEncoding.EncodeToString([]byte("bad")):  "not json",
		"baton.step.0." + base64.RawURLEncoding.EncodeToString([]byte("liar")): `{"format":1,"snapshot":{"id":"good","workflow":"echo"}}`,
		"baton.step.0.=" + strings.Repeat("A", 43):                             `{"format":1,"snapshot":{"id":"x","workflow":"echo"}}`,
	} {
		_, err := js.Publish(t.Context(), subject, []byte(data))
		require.NoError(t, err)
	}
	nc.Close()
	f.srv.Close()

	f = open()
	code, body = f.do("POST", "/v1/reports", map[string]any{"instance_id": "good", "step": 1, "agent": "worker", "trigger": "done"})
	require.Equal(t, 200, code)
	assert.Equal(t, true, body["ok"], "the good instance was resumed: %v", body)
	f.waitStatus("good", "completed")
	code, body = f.do("GET", "/v1/instances/bad", nil)
	assert.NotEqual(t, 200, code, "a damaged instance reads as an error: %v", body)
}
