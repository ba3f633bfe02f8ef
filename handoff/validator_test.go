package handoff_test

import (
	"errors"
	"testing"

	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/registry"
	"github.com/batonhq/baton/transport"
)

func newValidator(t testing.TB, opts ...handoff.Option) *handoff.Validator {
	t.Helper()
	v, err := handoff.NewValidator(newRegistry(t), opts...)
	if err != nil {
		t.Fatalf("NewValidator: %v", err)
	}
	return v
}

// history builds a list of records of hand-offs from -> to pairs.
func history(pairs ...string) []string {
	out := make([]string, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, pairs[i+1])
	}
	return out
}

// refusal asserts err is a *RefusalError by check with both sentinels.
func refusal(t *testing.T, err error, check string, sentinel error) *handoff.RefusalError {
	t.Helper()
	var r *handoff.RefusalError
	if !errors.As(err, &r) {
		t.Fatalf("error = %v, want *RefusalError", err)
	}
	if r.Check != check {
		t.Errorf("got check %q, want %q (%v)", r.Check, check, err)
	}
	for _, s := range []error{handoff.ErrHandoffRefused, sentinel, transport.ErrHandoff} {
		if !errors.Is(err, s) {
			t.Errorf("error %v does not match %v", err, s)
		}
	}
	return r
}

func TestPRD040_ValidatesTargetExists(t *testing.T) {
	v := newValidator(t)
	err := v.Validate(handoff.Command{From: "customer", To: "paymnt", Reason: handoff.ReasonCapabilityMatch, Task: "refund"}, nil)
	r := refusal(t, err, handoff.CheckTarget, handoff.ErrUnknownTarget)
	if !errors.Is(err, registry.ErrUnknownAgent) {
		t.Errorf("error %v does not match registry.ErrUnknownAgent", err)
	}
	if r.From != "customer" || r.To != "paymnt" {
		t.Errorf("got %s -> %s, want customer -> paymnt", r.From, r.To)
	}
	want := `handoff: refused customer -> paymnt (target_exists): target agent "paymnt" not found (did you mean "payment"?)`
	if err.Error() != want {
		t.Errorf("got %q, want %q", err.Error(), want)
	}
	if err := v.Validate(handoff.Command{From: "customer", To: "payment", Reason: handoff.ReasonCapabilityMatch, Task: "refund"}, nil); err != nil {
		t.Errorf("existing target refused: %v", err)
	}
}

func TestPRD040_ValidatesCapabilityMatch(t *testing.T) {
	v := newValidator(t)
	tests := []struct {
		name string
		cmd  handoff.Command
		ok   bool
	}{
		{"target has it", handoff.Command{From: "seller", To: "rag", Reason: handoff.ReasonCapabilityMatch, Task: "search", Payload: map[string]any{handoff.CapabilityKey: "rag_search"}}, true},
		{"a capability that is not a string names none", handoff.Command{From: "seller", To: "payment", Reason: handoff.ReasonCapabilityMatch, Task: "search", Payload: map[string]any{handoff.CapabilityKey: 7}}, true},
		{"target lacks it", handoff.Command{From: "seller", To: "payment", Reason: handoff.ReasonCapabilityMatch, Task: "search", Payload: map[string]any{handoff.CapabilityKey: "rag_search"}}, false},
		{"another target lacks it", handoff.Command{From: "seller", To: "notification", Reason: handoff.ReasonCapabilityMatch, Task: "search", Payload: map[string]any{handoff.CapabilityKey: "rag_search"}}, false},
		{"no capability named", handoff.Command{From: "seller", To: "payment", Reason: handoff.ReasonCapabilityMatch, Task: "search"}, true},
		{"other reason ignores it", handoff.Command{From: "seller", To: "payment", Reason: handoff.ReasonClarification, Task: "search", Payload: map[string]any{handoff.CapabilityKey: "rag_search"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Validate(tt.cmd, nil)
			if tt.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			r := refusal(t, err, handoff.CheckCapability, handoff.ErrCapabilityMismatch)
			want := `target agent "` + tt.cmd.To + `" does not have capability "rag_search"`
			if r.Reason != want {
				t.Errorf("got reason %q, want %q", r.Reason, want)
			}
		})
	}
}

func TestPRD040_DetectsLoops(t *testing.T) {
	v := newValidator(t)
	to := func(target string) handoff.Command {
		return handoff.Command{From: "supervisor", To: target, Reason: handoff.ReasonPlanStep, Task: "work"}
	}
	tests := []struct {
		name   string
		target string
		recent []string
		loop   bool
	}{
		{"no history", "seller", nil, false},
		{"one earlier", "seller", history("customer", "seller"), false},
		{"two earlier", "seller", history("customer", "seller", "seller", "customer", "customer", "seller"), true},
		{"two, one outside the window", "seller", history("customer", "seller", "a", "b", "c", "d", "e", "f", "g", "h", "i", "seller"), false},
		{"two in the last five", "seller", history("a", "b", "x", "seller", "c", "d", "e", "seller", "f", "g"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Validate(to(tt.target), tt.recent)
			if !tt.loop {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			r := refusal(t, err, handoff.CheckLoop, handoff.ErrLoopDetected)
			want := `potential hand-off loop: "seller" already received 2 of the last 5 hand-offs (limit 2)`
			if r.Reason != want {
				t.Errorf("got %q, want %q", r.Reason, want)
			}
		})
	}
}

func TestValidator_LoopWindowOption(t *testing.T) {
	v := newValidator(t, handoff.WithLoopWindow(3, 1))
	cmd := handoff.Command{From: "supervisor", To: "seller", Reason: handoff.ReasonPlanStep, Task: "w"}
	if err := v.Validate(cmd, history("a", "seller", "b", "c", "d", "e", "f", "g")); err != nil {
		t.Errorf("seller outside a window of 3 refused: %v", err)
	}
	err := v.Validate(cmd, history("a", "seller", "b", "c"))
	refusal(t, err, handoff.CheckLoop, handoff.ErrLoopDetected)
}

func TestPRD040_RefusesSystemAgent(t *testing.T) {
	v := newValidator(t)
	cmd := handoff.Command{From: "seller", To: "error_monitor", Reason: handoff.ReasonClarification, Task: "help"}
	r := refusal(t, v.Validate(cmd, nil), handoff.CheckSystem, handoff.ErrSystemAgent)
	if want := `cannot hand off to system agent "error_monitor" (only "supervisor" may)`; r.Reason != want {
		t.Errorf("got %q, want %q", r.Reason, want)
	}
	cmd.From = "supervisor"
	if err := v.Validate(cmd, nil); err != nil {
		t.Errorf("supervisor refused: %v", err)
	}
}

func TestValidator_Refusals(t *testing.T) {
	v := newValidator(t)
	tests := []struct {
		name     string
		cmd      handoff.Command
		recent   []string
		check    string
		sentinel error
		msg      string
	}{
		{"unknown target", handoff.Command{From: "seller", To: "ghost", Reason: handoff.ReasonClarification, Task: "t"}, nil,
			handoff.CheckTarget, handoff.ErrUnknownTarget, `handoff: refused seller -> ghost (target_exists): target agent "ghost" not found`},
		{"unknown target wins over self", handoff.Command{From: "ghost", To: "ghost", Reason: handoff.ReasonClarification}, nil,
			handoff.CheckTarget, handoff.ErrUnknownTarget, `handoff: refused ghost -> ghost (target_exists): target agent "ghost" not found`},
		{"not selectable", handoff.Command{From: "seller", To: "payment", Reason: handoff.ReasonUserRequest, Task: "t"}, nil,
			handoff.CheckSelectable, handoff.ErrNotSelectable, `handoff: refused seller -> payment (selectable): agent "payment" is not user-selectable`},
		{"self", handoff.Command{From: "seller", To: "seller", Reason: handoff.ReasonClarification, Task: "t"}, nil,
			handoff.CheckSelf, handoff.ErrSelfHandoff, `handoff: refused seller -> seller (not_self): cannot hand off to self`},
		{"self wins over system", handoff.Command{From: "error_monitor", To: "error_monitor", Reason: handoff.ReasonErrorRecovery, Task: "t"}, nil,
			handoff.CheckSelf, handoff.ErrSelfHandoff, `handoff: refused error_monitor -> error_monitor (not_self): cannot hand off to self`},
		{"system wins over loop", handoff.Command{From: "seller", To: "supervisor", Reason: handoff.ReasonErrorRecovery, Task: "t"}, history("a", "supervisor", "b", "supervisor"),
			handoff.CheckSystem, handoff.ErrSystemAgent, `handoff: refused seller -> supervisor (system_agent): cannot hand off to system agent "supervisor" (only "supervisor" may)`},
		{"loop wins over capability", handoff.Command{From: "seller", To: "payment", Reason: handoff.ReasonCapabilityMatch, Payload: map[string]any{handoff.CapabilityKey: "fly"}, Task: "t"}, history("a", "payment", "b", "payment"),
			handoff.CheckLoop, handoff.ErrLoopDetected, `handoff: refused seller -> payment (loop): potential hand-off loop: "payment" already received 2 of the last 5 hand-offs (limit 2)`},
		{"capability wins over task", handoff.Command{From: "seller", To: "payment", Reason: handoff.ReasonCapabilityMatch, Payload: map[string]any{handoff.CapabilityKey: "fly"}}, nil,
			handoff.CheckCapability, handoff.ErrCapabilityMismatch, `handoff: refused seller -> payment (capability): target agent "payment" does not have capability "fly"`},
		{"task", handoff.Command{From: "seller", To: "payment", Reason: handoff.ReasonPlanStep, Priority: -1}, nil,
			handoff.CheckTask, handoff.ErrTaskRequired, `handoff: refused seller -> payment (task_description): a task description is required`},
		{"priority", handoff.Command{From: "seller", To: "payment", Reason: handoff.ReasonPlanStep, Task: "t", Priority: -1}, nil,
			handoff.CheckPriority, handoff.ErrInvalidPriority, `handoff: refused seller -> payment (priority): priority -1 is not a rank (1 critical, 2 high, 5 normal, 10 low)`},
		{"reason", handoff.Command{From: "seller", To: "payment", Reason: "whim", Task: "t"}, nil,
			handoff.CheckReason, handoff.ErrInvalidReason, `handoff: refused seller -> payment (reason): unknown reason "whim"`},
		{"empty reason", handoff.Command{From: "seller", To: "payment", Task: "t"}, nil,
			handoff.CheckReason, handoff.ErrInvalidReason, `handoff: refused seller -> payment (reason): unknown reason ""`},
		{"rule: target", handoff.Command{From: "customer", To: "selr", Reason: handoff.ReasonRule, Task: "t"}, nil,
			handoff.CheckTarget, handoff.ErrUnknownTarget, `handoff: refused customer -> selr (target_exists): target agent "selr" not found (did you mean "seller"?)`},
		{"rule: task", handoff.Command{From: "customer", To: "seller", Reason: handoff.ReasonRule}, nil,
			handoff.CheckTask, handoff.ErrTaskRequired, `handoff: refused customer -> seller (task_description): a task description is required`},
		{"rule: priority", handoff.Command{From: "customer", To: "seller", Reason: handoff.ReasonRule, Task: "t", Priority: -5}, nil,
			handoff.CheckPriority, handoff.ErrInvalidPriority, `handoff: refused customer -> seller (priority): priority -5 is not a rank (1 critical, 2 high, 5 normal, 10 low)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Validate(tt.cmd, tt.recent)
			refusal(t, err, tt.check, tt.sentinel)
			if err.Error() != tt.msg {
				t.Errorf("got  %q\nwant %q", err.Error(), tt.msg)
			}
		})
	}
}

func TestValidator_RuleSkipsDynamicChecks(t *testing.T) {
	v := newValidator(t)
	// Self, system target, loop, capability and selectability: all checked at
	// load time for rules, so none of them refuses a rule's hand-off.
	for _, cmd := range []handoff.Command{
		{From: "seller", To: "seller", Reason: handoff.ReasonRule, Task: "re-enter"},
		{From: "seller", To: "error_monitor", Reason: handoff.ReasonRule, Task: "final notice"},
		{From: "seller", To: "payment", Reason: handoff.ReasonRule, Task: "again", Payload: map[string]any{handoff.CapabilityKey: "fly"}},
	} {
		if err := v.Validate(cmd, history("a", "payment", "b", "payment", "c", "payment")); err != nil {
			t.Errorf("rule hand-off %s -> %s refused: %v", cmd.From, cmd.To, err)
		}
	}
}

func TestNewValidator_Invalid(t *testing.T) {
	reg := newRegistry(t)
	tests := []struct {
		name string
		reg  *registry.Registry
		opts []handoff.Option
		msg  string
	}{
		{"nil registry", nil, nil, "handoff: NewValidator: registry is nil"},
		{"zero window", reg, []handoff.Option{handoff.WithLoopWindow(0, 2)}, "handoff: WithLoopWindow: window and repeats must be at least 1"},
		{"zero repeats", reg, []handoff.Option{handoff.WithLoopWindow(5, 0)}, "handoff: WithLoopWindow: window and repeats must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := handoff.NewValidator(tt.reg, tt.opts...)
			if v != nil || !errors.Is(err, handoff.ErrInvalidOption) || err.Error() != tt.msg {
				t.Errorf("got %v, %v, want nil and %q", v, err, tt.msg)
			}
		})
	}
}

func FuzzValidate(f *testing.F) {
	f.Add("seller", "payment", "capability_match", "t", "refund", 2, "payment", "payment")
	f.Add("", "", "", "", "", -1, "", "")
	f.Add("seller", "seller", "rule", "", "x", 0, "seller", "a")
	f.Fuzz(func(t *testing.T, from, to, reason, task, capability string, priority int, h1, h2 string) {
		v := newValidator(t)
		cmd := handoff.Command{From: from, To: to, Reason: handoff.Reason(reason), Task: task, Payload: map[string]any{handoff.CapabilityKey: capability}, Priority: priority}
		err := v.Validate(cmd, history(from, h1, h1, h2))
		if err == nil {
			return
		}
		var r *handoff.RefusalError
		if !errors.As(err, &r) || !errors.Is(err, handoff.ErrHandoffRefused) || r.Check == "" || r.Reason == "" {
			t.Fatalf("error %v is not a complete refusal", err)
		}
	})
}
