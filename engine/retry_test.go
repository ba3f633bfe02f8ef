package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/record"
)

func flakies(n int) []reply {
	out := make([]reply, n)
	for i := range out {
		out[i] = fail(fmt.Sprintf("flaky %d", i+1))
	}
	return out
}

// offsets returns the virtual times of runs relative to the first.
func offsets(runs []call) []time.Duration {
	out := make([]time.Duration, len(runs))
	for i, c := range runs {
		out[i] = c.At.Sub(runs[0].At)
	}
	return out
}

func TestEngine_Retry_BackoffSchedule(t *testing.T) {
	s := time.Second
	tests := []struct {
		name        string
		worker      []reply
		wantOutcome string
		wantAt      []time.Duration // run times after the first run
		wantDelays  []time.Duration // the retry entries' delays
		wantWhy     any
		wantRetry   any
	}{
		{
			name: "succeeds on the third run", worker: append(flakies(2), ok("done", nil)),
			wantOutcome: "DONE", wantAt: []time.Duration{0, 1 * s, 6 * s}, wantDelays: []time.Duration{1 * s, 5 * s},
		},
		{
			name: "retries exhausted: last backoff value repeats", worker: flakies(5),
			wantOutcome: "ERRORED", wantAt: []time.Duration{0, 1 * s, 6 * s, 36 * s, 66 * s},
			wantDelays: []time.Duration{1 * s, 5 * s, 30 * s, 30 * s}, wantWhy: "flaky 5", wantRetry: true,
		},
		{
			name: "permanent error is not retried", worker: []reply{permanent("card declined")},
			wantOutcome: "ERRORED", wantAt: []time.Duration{0}, wantWhy: "card declined", wantRetry: false,
		},
		{
			name: "permanent error after a retry stops retrying", worker: []reply{fail("flaky 1"), permanent("card declined")},
			wantOutcome: "ERRORED", wantAt: []time.Duration{0, 1 * s}, wantDelays: []time.Duration{1 * s}, wantWhy: "card declined", wantRetry: false,
		},
		{
			name: "a panic is a failed run and is retried", worker: []reply{panics("boom"), ok("done", nil)},
			wantOutcome: "DONE", wantAt: []time.Duration{0, 1 * s}, wantDelays: []time.Duration{1 * s},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "retry.yaml", map[string][]reply{"worker": tt.worker})
			res, h := r.finish(nil)
			wantCompleted(t, res, tt.wantOutcome)
			runs := r.script.runsOf("worker")
			if got := offsets(runs); !slices.Equal(got, tt.wantAt) {
				t.Errorf("run times: got %v, want %v", got, tt.wantAt)
			}
			var delays []time.Duration
			for _, e := range entries(h, record.KindRetry) {
				delays = append(delays, e.Delay)
			}
			if !slices.Equal(delays, tt.wantDelays) {
				t.Errorf("retry delays: got %v, want %v", delays, tt.wantDelays)
			}
			for n, c := range runs {
				task := c.Task
				if task.Attempt != n+1 || task.Step != n+1 || task.From != "" || task.IdempotencyKey != fmt.Sprintf("%s:%d", res.ID, n+1) {
					t.Errorf("run %d: got attempt %d step %d from %q key %q, want attempt and step %d from the engine", n+1, task.Attempt, task.Step, task.From, task.IdempotencyKey, n+1)
				}
			}
			if res.Steps != len(tt.wantAt) {
				t.Errorf("got %d steps, want %d (every retry is a step)", res.Steps, len(tt.wantAt))
			}
			if res.Context["why"] != tt.wantWhy || res.Context["retryable"] != tt.wantRetry {
				t.Errorf("got error.message %v retryable %v, want %v and %v", res.Context["why"], res.Context["retryable"], tt.wantWhy, tt.wantRetry)
			}
			if got := len(entries(h, record.KindDispatch)); got != len(tt.wantAt) {
				t.Errorf("got %d engine dispatches, want %d (the first run and each retry)", got, len(tt.wantAt))
			}
		})
	}
}

func TestEngine_Retry_PanicIsRecordedAsAnError(t *testing.T) {
	r := newSimRun(t, "retry.yaml", map[string][]reply{"worker": repeat(5, panics("boom"))})
	res, h := r.finish(nil)
	wantCompleted(t, res, "ERRORED")
	if why, _ := res.Context["why"].(string); !strings.Contains(why, "agent handler panicked: boom") {
		t.Errorf("got error.message %q, want it to say the handler panicked", why)
	}
	runs := entries(h, record.KindAgentRun)
	if len(runs) != 5 {
		t.Fatalf("got %d agent runs, want 5", len(runs))
	}
	for _, e := range runs {
		if !strings.Contains(e.Error, "panicked: boom") {
			t.Errorf("got run error %q, want the panic", e.Error)
		}
	}
}

func TestEngine_Timeout(t *testing.T) {
	s := time.Second
	tests := []struct {
		name        string
		worker      string
		agent       string
		runs        []reply
		wantOutcome string
		wantAt      []time.Duration
		wantErrors  []string // each run's recorded error
	}{
		{
			name: "timeout then success after the backoff", worker: "slow", agent: "slow",
			runs:        []reply{takes(11*s, ok("done", nil)), takes(3*s, ok("done", nil))},
			wantOutcome: "DONE", wantAt: []time.Duration{0, 13 * s},
			wantErrors: []string{"engine: run timed out: slow did not finish within 10s", ""},
		},
		{
			name: "timeouts exhaust the retries: outcome timeout", worker: "slow", agent: "slow",
			runs:        []reply{takes(11*s, ok("done", nil)), takes(20*s, ok("done", nil))},
			wantOutcome: "TIMEDOUT", wantAt: []time.Duration{0, 13 * s},
			wantErrors: []string{"engine: run timed out: slow did not finish within 10s", "engine: run timed out: slow did not finish within 10s"},
		},
		{
			name: "last run failed without timing out: outcome error", worker: "slow", agent: "slow",
			runs:        []reply{takes(11*s, ok("done", nil)), fail("broken")},
			wantOutcome: "ERRORED", wantAt: []time.Duration{0, 13 * s},
			wantErrors: []string{"engine: run timed out: slow did not finish within 10s", "broken"},
		},
		{
			name: "exactly the timeout is in time", worker: "slow", agent: "slow",
			runs:        []reply{takes(10*s, ok("done", nil))},
			wantOutcome: "DONE", wantAt: []time.Duration{0}, wantErrors: []string{""},
		},
		{
			name: "no retry: the first timeout is the outcome", worker: "hasty", agent: "hasty",
			runs:        []reply{takes(time.Minute, ok("done", nil))},
			wantOutcome: "TIMEDOUT", wantAt: []time.Duration{0},
			wantErrors: []string{"engine: run timed out: hasty did not finish within 10s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSimRun(t, "retry.yaml", map[string][]reply{
				"worker": {ok(tt.worker, nil)},
				tt.agent: tt.runs,
			})
			res, h := r.finish(nil)
			wantCompleted(t, res, tt.wantOutcome)
			if got := offsets(r.script.runsOf(tt.agent)); !slices.Equal(got, tt.wantAt) {
				t.Errorf("run times: got %v, want %v", got, tt.wantAt)
			}
			var errs []string
			for _, e := range entries(h, record.KindAgentRun) {
				if e.Agent == tt.agent {
					errs = append(errs, e.Error)
				}
			}
			if !slices.Equal(errs, tt.wantErrors) {
				t.Errorf("run errors: got %q, want %q", errs, tt.wantErrors)
			}
			if tt.wantOutcome == "TIMEDOUT" && res.Context["why"] != tt.wantErrors[len(tt.wantErrors)-1] {
				t.Errorf("got error.message %v, want %q", res.Context["why"], tt.wantErrors[len(tt.wantErrors)-1])
			}
			if late := entries(h, record.KindLateReply); len(late) > 0 {
				t.Errorf("got late replies %+v, want none (a run that overran reports through its own time-out)", late)
			}
		})
	}
}
