package rules_test

import (
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/rules"
)

func TestLoad_WaitAndRetryPolicy(t *testing.T) {
	w, err := rules.Load("testdata/valid/wait_retry.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ap, _ := w.State("APPROVAL")
	if !ap.Waits() || !slices.Equal(ap.Wait.Signals, []string{"approved", "rejected"}) || ap.Timeout != 48*time.Hour {
		t.Fatalf("got APPROVAL %+v wait %+v, want a 48h wait for approved, rejected", ap, ap.Wait)
	}
	if got := w.Owner("APPROVAL"); got != "APPROVAL" {
		t.Errorf("got owner %q, want the state itself", got)
	}
	if got := w.Candidates("APPROVAL", "APPROVAL", "approved"); len(got) != 1 || got[0].ID != "approved" {
		t.Errorf("got candidates %v, want rule approved", got)
	}
	dr, _ := w.State("DRAFTING")
	want := rules.Retry{Max: 5, Initial: time.Second, Rate: 2, MaxDelay: time.Minute, Jitter: rules.JitterFull,
		On: []string{"rate_limited", "timeout"}, Except: []string{"invalid_result"}}
	got := dr.Retry
	if got.Max != want.Max || got.Initial != want.Initial || got.Rate != want.Rate || got.MaxDelay != want.MaxDelay ||
		got.Jitter != want.Jitter || !slices.Equal(got.On, want.On) || !slices.Equal(got.Except, want.Except) {
		t.Errorf("got retry %+v, want %+v", got, want)
	}
	if dr.Heartbeat != 30*time.Second {
		t.Errorf("got heartbeat %s, want 30s", dr.Heartbeat)
	}
	if len(w.Warnings) != 0 {
		t.Errorf("got warnings %v, want none", w.Warnings)
	}
}

func TestRetry_Delay_ListAndObject(t *testing.T) {
	s := time.Second
	tests := []struct {
		name  string
		retry rules.Retry
		want  []time.Duration // retries 1..n
	}{
		{"list, last value repeats", rules.Retry{Backoff: []time.Duration{s, 5 * s}}, []time.Duration{s, 5 * s, 5 * s}},
		{"none", rules.Retry{}, []time.Duration{0, 0}},
		{"object, default rate 2", rules.Retry{Initial: s, Rate: 2}, []time.Duration{s, 2 * s, 4 * s, 8 * s}},
		{"object, rate 3 capped by max", rules.Retry{Initial: s, Rate: 3, MaxDelay: 10 * s}, []time.Duration{s, 3 * s, 9 * s, 10 * s, 10 * s}},
		{"object, rate 1 is constant", rules.Retry{Initial: 2 * s, Rate: 1}, []time.Duration{2 * s, 2 * s}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []time.Duration
			for n := 1; n <= len(tt.want); n++ {
				got = append(got, tt.retry.Delay(n))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if d := (rules.Retry{Initial: s, Rate: 2}).Delay(200); d <= 0 {
		t.Errorf("got %s for a huge retry number, want a positive delay", d)
	}
}

func TestRetry_Jittered(t *testing.T) {
	none := rules.Retry{Initial: 4 * time.Second, Rate: 2, Jitter: rules.JitterNone}
	if got := none.Jittered(2, 0.3); got != 8*time.Second {
		t.Errorf("no jitter: got %s, want 8s", got)
	}
	full := none
	full.Jitter = rules.JitterFull
	for _, tt := range []struct {
		u    float64
		want time.Duration
	}{{0, 0}, {0.5, 4 * time.Second}, {0.9999, 7999 * time.Millisecond}, {0.999999999999, 8 * time.Second}} {
		if got := full.Jittered(2, tt.u); got != tt.want {
			t.Errorf("full jitter at u=%v: got %s, want %s", tt.u, got, tt.want)
		}
	}
}

func TestRetry_Retries(t *testing.T) {
	tests := []struct {
		name  string
		retry rules.Retry
		kind  string
		want  bool
	}{
		{"default retries every kind", rules.Retry{}, "rate_limited", true},
		{"default never retries a rejection", rules.Retry{}, "rejected", false},
		{"on lists the kind", rules.Retry{On: []string{"timeout"}}, "timeout", true},
		{"on lacks the kind", rules.Retry{On: []string{"timeout"}}, "error", false},
		{"except lists the kind", rules.Retry{Except: []string{"invalid_result"}}, "invalid_result", false},
		{"except lacks the kind", rules.Retry{Except: []string{"invalid_result"}}, "panic", true},
		{"rejected even when on lists it", rules.Retry{On: []string{"rejected"}}, "rejected", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.retry.Retries(tt.kind); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
