package rules_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/rules"
)

func TestLoad_ValidFixturesHaveNoErrors(t *testing.T) {
	files, err := filepath.Glob("testdata/valid/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("got %d valid fixtures (%v), want at least 3", len(files), err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			w, err := rules.Load(f)
			if err != nil {
				t.Fatalf("got %v, want no error", err)
			}
			src, _ := os.ReadFile(f)
			sum := sha256.Sum256(src)
			if w.Hash != hex.EncodeToString(sum[:]) {
				t.Errorf("got hash %s, want the sha256 of the file", w.Hash)
			}
			if w.File != f {
				t.Errorf("got file %q, want %q", w.File, f)
			}
		})
	}
}

func TestLoad_StrictFixturesHaveNoWarnings(t *testing.T) {
	for _, f := range []string{"refund.yaml", "parallel.yaml", "anchors.yaml"} {
		w := loadValid(t, f)
		if len(w.Warnings) != 0 {
			t.Errorf("%s: got warnings %v, want none", f, w.Warnings)
		}
	}
}

func TestLoad_Refund(t *testing.T) {
	w := loadValid(t, "refund.yaml")
	if w.Name != "refund" || w.Version != 1 || w.Initial != "VALIDATING" || w.Description != "Customer refund with seller approval" {
		t.Errorf("got header %q v%d initial %q desc %q", w.Name, w.Version, w.Initial, w.Description)
	}
	wantLimits := rules.Limits{MaxSteps: 50, MaxVisits: 10, HandoffWindow: 5, HandoffRepeats: 2}
	if w.Limits != wantLimits {
		t.Errorf("got limits %+v, want %+v", w.Limits, wantLimits)
	}
	var ids []string
	for _, a := range w.Agents {
		ids = append(ids, a.ID)
	}
	if want := []string{"customer", "seller", "payment", "notification", "supervisor"}; !slices.Equal(ids, want) {
		t.Errorf("got agents %v, want %v in file order", ids, want)
	}
	pay, _ := w.Agent("payment")
	if pay.Type != "finance" || pay.Queue != 1000 || !slices.Equal(pay.Capabilities, []string{"refund"}) || pay.Pos != (rules.Pos{Line: 9, Col: 3}) {
		t.Errorf("got payment %+v", *pay)
	}
	sup, _ := w.Agent("supervisor")
	if !sup.System || sup.Selectable {
		t.Errorf("got supervisor system=%v selectable=%v, want true false", sup.System, sup.Selectable)
	}
	rev, _ := w.State("REVIEWING")
	if rev.Agent != "seller" || rev.Timeout != 30*time.Second || rev.Retry.Max != 2 ||
		!slices.Equal(rev.Retry.Backoff, []time.Duration{100 * time.Millisecond, 500 * time.Millisecond}) ||
		rev.MaxVisits != 10 || rev.Parallel() || rev.Join != nil {
		t.Errorf("got REVIEWING %+v", *rev)
	}
	done, _ := w.State("COMPLETED")
	if !done.Terminal || w.Owner("COMPLETED") != "" || w.Owner("REVIEWING") != "seller" || w.Owner("NOPE") != "" {
		t.Errorf("got terminal %v owners %q %q", done.Terminal, w.Owner("COMPLETED"), w.Owner("REVIEWING"))
	}
	el, _ := w.Rule("eligible")
	if el.From != "customer" || !slices.Equal(el.Triggers, []string{"validated"}) || el.Priority != rules.PriorityHigh ||
		el.To != "seller" || el.Next != "REVIEWING" || !slices.Equal(el.Sources, []string{"VALIDATING"}) ||
		el.Index != 0 || el.Condition.Source != "result.refund_eligible == true" || el.Condition.Pos != (rules.Pos{Line: 28, Col: 16}) {
		t.Errorf("got eligible %+v", *el)
	}
	if len(el.Context) != 2 || el.Context[0].Key != "order_id" || el.Context[1].Key != "amount" {
		t.Errorf("got context %+v, want order_id then amount", el.Context)
	}
	ap, _ := w.Rule("approved")
	want := map[string]any{"refund_method": "original_payment", "processing_time": "within_3_days"}
	if !reflect.DeepEqual(ap.Constraints, want) {
		t.Errorf("got constraints %#v, want %#v", ap.Constraints, want)
	}
	ne, _ := w.Rule("not_eligible")
	if ne.To != "notification" || !ne.FinalNotice(w) || ne.Priority != rules.PriorityLow {
		t.Errorf("got not_eligible to %q final %v priority %d", ne.To, ne.FinalNotice(w), ne.Priority)
	}
	ru, _ := w.Rule("review_undecided")
	if ru.To != "" || ru.FinalNotice(w) {
		t.Errorf("got review_undecided to %q, want no hand-off into a terminal state", ru.To)
	}
	if _, ok := w.Rule("nope"); ok {
		t.Error("got rule nope, want none")
	}
}

func TestLoad_Parallel(t *testing.T) {
	w := loadValid(t, "parallel.yaml")
	s, _ := w.State("SEARCHING")
	wantJoin := rules.Join{Strategy: rules.JoinQuorum, Quorum: 2, Timeout: 30 * time.Second, OnPartial: rules.OnPartialProceed}
	if !s.Parallel() || !slices.Equal(s.Agents, []string{"flight", "hotel", "car"}) || s.Join == nil || *s.Join != wantJoin ||
		s.Merge != "weighted_vote" || s.MaxVisits != 3 || w.Owner("SEARCHING") != "SEARCHING" {
		t.Errorf("got SEARCHING %+v join %+v", *s, s.Join)
	}
	f, _ := w.Agent("flight")
	if f.Expertise != 0.9 || f.Accuracy != 0.8 {
		t.Errorf("got flight expertise %v accuracy %v", f.Expertise, f.Accuracy)
	}
	p, _ := w.Agent("planner")
	if !p.Selectable {
		t.Error("got planner not selectable")
	}
	if w.Limits != (rules.Limits{MaxSteps: 40, MaxVisits: 5, HandoffWindow: 4, HandoffRepeats: 1, OnLimit: "FAILED"}) {
		t.Errorf("got limits %+v", w.Limits)
	}
	if fs, _ := w.State("FAILED"); fs.MaxVisits != 1 {
		t.Errorf("got FAILED max visits %d, want 1", fs.MaxVisits)
	}
	if ps, _ := w.State("PAYING"); ps.MaxVisits != 5 || !slices.Equal(ps.Retry.Backoff, []time.Duration{250 * time.Millisecond}) {
		t.Errorf("got PAYING max visits %d backoff %v", ps.MaxVisits, ps.Retry.Backoff)
	}
	plan, _ := w.Rule("plan_ready")
	if plan.To != "" {
		t.Errorf("got plan_ready to %q, want none into a parallel state", plan.To)
	}
	joined, _ := w.Rule("all_joined")
	if joined.To != "payment" || !slices.Equal(joined.Sources, []string{"SEARCHING"}) || joined.Priority != 2 {
		t.Errorf("got all_joined %+v", *joined)
	}
	paid, _ := w.Rule("paid")
	want := map[string]any{"currency": "EUR", "refundable": true, "max_amount": 2500.5,
		"split": []any{3, "two", nil}, "nested": map[string]any{"deep": map[string]any{"deeper": 1}}}
	if !reflect.DeepEqual(paid.Constraints, want) {
		t.Errorf("got constraints %#v, want %#v", paid.Constraints, want)
	}
	pe, _ := w.Rule("payment_error")
	if pe.Priority != rules.PriorityCritical || !slices.Equal(pe.Triggers, []string{"error", "timeout", "rejected"}) {
		t.Errorf("got payment_error priority %d triggers %v", pe.Priority, pe.Triggers)
	}
}

func TestLoad_AnchorsAndMergeKeys(t *testing.T) {
	w := loadValid(t, "anchors.yaml")
	a, _ := w.Agent("b")
	if a.Type != "worker" || !slices.Equal(a.Capabilities, []string{"x", "y"}) || a.Queue != 7 {
		t.Errorf("got merged agent %+v, want type worker, caps [x y], queue 7", *a)
	}
	s, _ := w.State("B")
	if s.Timeout != 2*time.Second || s.Retry.Max != 1 {
		t.Errorf("got merged state %+v", *s)
	}
}

func TestLoad_Defaults(t *testing.T) {
	src := "workflow: w\ninitial: A\nagents: {a: }\nstates: {A: {agent: a}, B: {terminal: true}}\nrules: [{id: r, from: a, trigger: t, next: B}]\n"
	w, err := rules.Parse("d.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := rules.Limits{MaxSteps: rules.DefaultMaxSteps, MaxVisits: rules.DefaultMaxVisits,
		HandoffWindow: rules.DefaultHandoffWindow, HandoffRepeats: rules.DefaultHandoffRepeats}
	if w.Version != 1 || w.Limits != want {
		t.Errorf("got version %d limits %+v, want 1 %+v", w.Version, w.Limits, want)
	}
	a, _ := w.Agent("a")
	if a.Type != "a" {
		t.Errorf("got type %q, want the agent id", a.Type)
	}
	r := w.Rules[0]
	if r.Priority != rules.PriorityNormal || r.Condition != nil || r.Task != nil || r.Constraints != nil {
		t.Errorf("got rule %+v", *r)
	}
	if d, err := r.TaskDescription(nil); err != nil || d != "r" {
		t.Errorf("got task %q, %v, want the rule id", d, err)
	}
	if c, err := r.EvalContext(nil); err != nil || c == nil || len(c) != 0 {
		t.Errorf("got context %v, %v, want an empty map", c, err)
	}
}

func TestLoad_MissingFile(t *testing.T) {
	_, err := rules.Load("testdata/does-not-exist.yaml")
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want os.ErrNotExist", err)
	}
}

func TestRule_TaskDescriptionAndContext(t *testing.T) {
	w := loadValid(t, "refund.yaml")
	env := newEnv()
	env.Result["order_id"] = "12345"
	env.Input["amount"] = 50
	el, _ := w.Rule("eligible")
	if d, err := el.TaskDescription(env); err != nil || d != "Approve refund for order 12345" {
		t.Errorf("got %q, %v", d, err)
	}
	ctx, err := el.EvalContext(env)
	if err != nil || !reflect.DeepEqual(ctx, map[string]any{"order_id": "12345", "amount": 50}) {
		t.Errorf("got context %v, %v", ctx, err)
	}
	ap, _ := w.Rule("approved")
	if d, _ := ap.TaskDescription(env); d != "Process the approved refund" {
		t.Errorf("got %q, want the reason", d)
	}
	// A task that does not produce a string fails with an *EvalError.
	env.Result["order_id"] = 12345
	var ee *rules.EvalError
	if _, err := el.TaskDescription(env); !errors.As(err, &ee) {
		t.Errorf("got %v, want *EvalError for string + int", err)
	}
	rf, _ := w.Rule("refunded")
	env.Result = map[string]any{}
	if d, err := rf.TaskDescription(env); err != nil || d != "Notify customer of refund unknown" {
		t.Errorf("got %q, %v, want the ?? default", d, err)
	}
}

func TestRetry_Delay(t *testing.T) {
	r := rules.Retry{Max: 5, Backoff: []time.Duration{time.Second, 2 * time.Second}}
	tests := []struct {
		n    int
		want time.Duration
	}{{0, 0}, {1, time.Second}, {2, 2 * time.Second}, {3, 2 * time.Second}, {9, 2 * time.Second}}
	for _, tt := range tests {
		if got := r.Delay(tt.n); got != tt.want {
			t.Errorf("Delay(%d): got %v, want %v", tt.n, got, tt.want)
		}
	}
	if got := (rules.Retry{Max: 2}).Delay(1); got != 0 {
		t.Errorf("got %v without backoff, want 0", got)
	}
}

func TestJoin_Needed(t *testing.T) {
	tests := []struct {
		join rules.Join
		n    int
		want int
	}{
		{rules.Join{Strategy: rules.JoinAll}, 3, 3},
		{rules.Join{Strategy: rules.JoinAny}, 3, 1},
		{rules.Join{Strategy: rules.JoinMajority}, 3, 2},
		{rules.Join{Strategy: rules.JoinMajority}, 4, 3},
		{rules.Join{Strategy: rules.JoinQuorum, Quorum: 2}, 3, 2},
	}
	for _, tt := range tests {
		if got := tt.join.Needed(tt.n); got != tt.want {
			t.Errorf("%s of %d: got %d, want %d", tt.join.Strategy, tt.n, got, tt.want)
		}
	}
}

func TestPriorityName(t *testing.T) {
	tests := []struct {
		p    int
		want string
	}{{1, "critical"}, {2, "high"}, {4, "high"}, {5, "normal"}, {9, "normal"}, {10, "low"}, {50, "low"}}
	for _, tt := range tests {
		if got := rules.PriorityName(tt.p); got != tt.want {
			t.Errorf("PriorityName(%d): got %s, want %s", tt.p, got, tt.want)
		}
	}
}

func TestDiagnostic_String(t *testing.T) {
	e := rules.Diagnostic{File: "w.yaml", Line: 3, Col: 7, Message: "boom"}
	if got := e.String(); got != "w.yaml:3:7: boom" {
		t.Errorf("got %q", got)
	}
	e.Severity = rules.SeverityWarning
	if got := e.String(); got != "w.yaml:3:7: warning: boom" {
		t.Errorf("got %q", got)
	}
}
