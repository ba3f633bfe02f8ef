package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/server"
)

// untilEnd reads events, and their ids, until the stream ends (bounded).
func (s *sse) untilEnd(t *testing.T) (evs []server.Event, ids []string) {
	t.Helper()
	for range 100000 {
		id, ev, ok := s.next()
		if !ok {
			return evs, ids
		}
		evs, ids = append(evs, ev), append(ids, id)
	}
	t.Fatal("the stream did not end within 100000 events")
	return nil, nil
}

func typesOf(evs []server.Event) []string {
	out := make([]string, len(evs))
	for k, ev := range evs {
		out[k] = ev.Type
	}
	return out
}

// An instance's stream sends its past events, then its live ones, each
// once and in the engine's order, and ends with end; once finished, the
// same events and end come at once, and a client resumes after any of
// them.
func TestServer_Events_InstanceReplayThenLiveThenEnd(t *testing.T) {
	f := newFixture(t)
	all := openEvents(t, f, "", "") // what the engine tells, live
	code, body := f.do("POST", "/v1/workflows/review/instances", map[string]any{"id": "rv-1", "input": map[string]any{"mode": "hold"}})
	require.Equal(t, 201, code, "%v", body)
	f.waitStatus("rv-1", "running")
	// Opened while the writer is at work: the past events come first.
	stream := openEvents(t, f, "?instance=rv-1", "")
	past := stream.until(t, "run_started")
	assert.Equal(t, []string{"instance_started", "state_changed", "run_started"}, typesOf(past))
	// The writer reports: the rest comes live, the checker declines.
	code, body = f.do("POST", "/v1/reports", map[string]any{"instance_id": "rv-1", "step": 1, "agent": "writer", "trigger": "drafted"})
	require.Equal(t, 200, code, "%v", body)
	rest, restIDs := stream.untilEnd(t)
	require.NotEmpty(t, rest)
	require.Equal(t, "end", rest[len(rest)-1].Type, "the stream ends with end once the instance is finished")
	live := append(past, rest[:len(rest)-1]...)

	// The engine's own events of the instance, as the stream without
	// instance got them: the same types in the same order (events that
	// are never recorded aside).
	var told []server.Event
	for range 200 {
		_, ev, ok := all.next()
		require.True(t, ok)
		if ev.Instance != "rv-1" || ev.Type == "agent_changed" || ev.Type == "agent_progress" || ev.Type == "dead_lettered" {
			continue
		}
		told = append(told, ev)
		if ev.Finished() {
			break
		}
	}
	require.Equal(t, typesOf(told), typesOf(live))
	for k := range told {
		want, got := told[k], live[k]
		assert.Equal(t, want.Step, got.Step, "event %d (%s): step", k, want.Type)
		assert.Equal(t, want.State, got.State, "event %d (%s): state", k, want.Type)
		assert.Equal(t, want.Agent, got.Agent, "event %d (%s): agent", k, want.Type)
		assert.Equal(t, want.From, got.From, "event %d (%s): from", k, want.Type)
		assert.Equal(t, want.To, got.To, "event %d (%s): to", k, want.Type)
		assert.Equal(t, want.Rule, got.Rule, "event %d (%s): rule", k, want.Type)
		assert.Equal(t, want.Trigger, got.Trigger, "event %d (%s): trigger", k, want.Type)
		assert.Equal(t, want.Attempt, got.Attempt, "event %d (%s): attempt", k, want.Type)
		assert.Equal(t, want.Outcome, got.Outcome, "event %d (%s): outcome", k, want.Type)
		assert.Equal(t, want.Workflow, got.Workflow)
		assert.Equal(t, want.Version, got.Version)
		assert.Equal(t, uint64(k+1), got.ID, "the instance's events are numbered from 1")
	}
	assert.Equal(t, "REJECTED", live[len(live)-1].Outcome)
	assert.Equal(t, strconv.Itoa(len(live)), restIDs[len(restIDs)-1], "end carries the last event's id")

	// Finished: the past events and end, at once.
	again, _ := openEvents(t, f, "?instance=rv-1", "").untilEnd(t)
	require.Equal(t, append(typesOf(live), "end"), typesOf(again))
	for k := range live {
		assert.Equal(t, live[k].ID, again[k].ID)
		assert.Equal(t, live[k].Time, again[k].Time, "a replayed event has the time of its entry")
	}
	// Resumed after the fourth: the others, none twice.
	resumed, _ := openEvents(t, f, "?instance=rv-1", "4").untilEnd(t)
	require.Equal(t, append(typesOf(live[4:]), "end"), typesOf(resumed))
	assert.Equal(t, uint64(5), resumed[0].ID)
}

// A stream of an instance that does not exist yet waits for it.
func TestServer_Events_InstanceNotYetStarted(t *testing.T) {
	f := newFixture(t)
	stream := openEvents(t, f, "?instance=later", "")
	code, body := f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": "later"})
	require.Equal(t, 201, code, "%v", body)
	evs := stream.until(t, "run_started")
	assert.Equal(t, []string{"instance_started", "state_changed", "run_started"}, typesOf(evs))
	code, _ = f.do("POST", "/v1/instances/later/cancel", nil)
	require.Equal(t, 202, code)
	rest, _ := stream.untilEnd(t)
	assert.Equal(t, []string{"cancelled", "end"}, typesOf(rest))
}

// A Last-Event-ID older than the server keeps, or one it never gave, gets
// a gap event naming the first event it can give, then the kept events.
func TestServer_Events_GapForAnExpiredID(t *testing.T) {
	f := newFixture(t, func(c *server.Config) { c.EventBuffer = 4 })
	for k := range 3 {
		id := fmt.Sprintf("g-%d", k)
		code, body := f.do("POST", "/v1/workflows/echo/instances", map[string]any{"id": id})
		require.Equal(t, 201, code, "%v", body)
		code, _ = f.do("POST", "/v1/instances/"+id+"/cancel", nil)
		require.Equal(t, 202, code)
		f.waitStatus(id, "cancelled")
	}
	// Each instance told four events: 12 in all, the last 4 kept.
	stream := openEvents(t, f, "", "1")
	id, gap, ok := stream.next()
	require.True(t, ok)
	require.Equal(t, "gap", gap.Type)
	assert.EqualValues(t, 9, gap.First)
	assert.Equal(t, "8", id, "resuming after the gap asks for the first event kept")
	_, first, ok := stream.next()
	require.True(t, ok)
	assert.EqualValues(t, 9, first.ID)

	// Within the buffer: no gap.
	_, next, ok := openEvents(t, f, "", "10").next()
	require.True(t, ok)
	assert.Equal(t, "run_started", next.Type)
	assert.EqualValues(t, 11, next.ID)

	// An id from before a restart (beyond the last given): a gap too.
	_, gap, ok = openEvents(t, f, "", "500").next()
	require.True(t, ok)
	assert.Equal(t, "gap", gap.Type)
	assert.EqualValues(t, 9, gap.First)
}

// quickFlow runs one Go handler and is done.
const quickFlow = `workflow: quick
initial: WORKING
agents:
  fast: {}
states:
  WORKING: {agent: fast}
  DONE: {terminal: true}
rules:
  - {id: done, from: fast, trigger: done, next: DONE}
`

// stuckFlush is a stream's writer whose flushes after the first wait for
// release: a client that stopped reading, as the server sees it.
type stuckFlush struct {
	http.ResponseWriter
	release <-chan struct{}
	flushes int
}

func (w *stuckFlush) Flush() {
	if w.flushes++; w.flushes > 1 {
		<-w.release
	}
	w.ResponseWriter.(http.Flusher).Flush()
}

func (w *stuckFlush) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Instances started at up to a thousand a second: a stream that reads
// gets every event, one that does not is dropped with a gap event, and
// every start goes through.
func TestServer_Events_KeepUpWithAThousandInstancesASecond(t *testing.T) {
	const n = 2000
	s, err := server.New(context.Background(), server.Config{
		WorkflowsDir: workflowsDir(t, "", map[string]string{"quick.yaml": quickFlow}), DataDir: t.TempDir(), NATS: server.NoNATS,
		Handlers: map[string]registry.Handler{"fast": registry.HandlerFunc(func(context.Context, *registry.Task) (registry.Outcome, error) {
			return registry.Outcome{Trigger: "done"}, nil
		})},
	})
	require.NoError(t, err)
	release := make(chan struct{})
	var releaseOnce sync.Once
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Slow") != "" {
			w = &stuckFlush{ResponseWriter: w, release: release}
		}
		s.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		releaseOnce.Do(func() { close(release) })
		s.Close()
		hs.Close()
	})
	f := &fixture{t: t, srv: s, http: hs}
	normal := openEvents(t, f, "", "")
	req, err := http.NewRequest("GET", hs.URL+"/v1/events", nil)
	require.NoError(t, err)
	req.Header.Set("X-Test-Slow", "1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, 200, resp.StatusCode)
	slow := &sse{resp: resp, sc: bufio.NewScanner(resp.Body)}

	// The normal stream's reader counts each instance's events.
	type seen struct {
		events    map[string]int
		completed int
		gaps      int
	}
	got := seen{events: map[string]int{}}
	read := make(chan struct{})
	go func() {
		defer close(read)
		for got.completed < n {
			_, ev, ok := normal.next()
			if !ok {
				return
			}
			got.events[ev.Instance]++
			switch ev.Type {
			case "completed":
				got.completed++
			case "gap":
				got.gaps++
				return
			}
		}
	}()

	// Starts paced at one a millisecond, by eight clients at once.
	ticks := time.NewTicker(time.Millisecond)
	defer ticks.Stop()
	ids := make(chan int)
	codes := make([]int, n)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for k := range ids {
				code, _ := doURL(t, "POST", hs.URL+"/v1/workflows/quick/instances", fmt.Sprintf(`{"id":"q-%d"}`, k))
				codes[k] = code
			}
		})
	}
	for k := range n {
		<-ticks.C
		ids <- k
	}
	close(ids)
	wg.Wait()
	for k, code := range codes {
		require.Equal(t, 201, code, "start %d", k)
	}
	select {
	case <-read:
	case <-time.After(2 * time.Minute):
		t.Fatal("the normal stream did not see every instance complete")
	}
	require.Zero(t, got.gaps, "the stream that reads had a gap")
	require.Equal(t, n, got.completed)
	require.Len(t, got.events, n)
	for id, count := range got.events {
		require.Equal(t, 7, count, "events of %s", id)
	}

	// The slow stream, released: what it held, then a gap, then its end.
	releaseOnce.Do(func() { close(release) })
	evs, ids2 := slow.untilEnd(t)
	require.NotEmpty(t, evs)
	last := evs[len(evs)-1]
	require.Equal(t, "gap", last.Type, "the slow stream ends with a gap")
	assert.Equal(t, "slow", last.Reason)
	require.Greater(t, len(evs), 1)
	assert.Equal(t, ids2[len(ids2)-2], ids2[len(ids2)-1], "the gap's id is the last event the stream was sent")
	assert.Less(t, len(evs)-1, 7*n, "the slow stream was dropped before the end")
}
