package rules_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/batonhq/baton/rules"
)

func loadValid(tb testing.TB, name string) *rules.Workflow {
	tb.Helper()
	w, err := rules.Load("testdata/valid/" + name)
	if err != nil {
		tb.Fatalf("load %s: %v", name, err)
	}
	return w
}

// tried renders a Match's or NoMatchError's evaluations as "id=true",
// "id=false" or "id=error".
func tried(evs []rules.Evaluation) []string {
	var out []string
	for _, ev := range evs {
		switch {
		case ev.Err != nil:
			out = append(out, ev.Rule.ID+"=error")
		case ev.Result:
			out = append(out, ev.Rule.ID+"=true")
		default:
			out = append(out, ev.Rule.ID+"=false")
		}
	}
	return out
}

func newEnv() *rules.Env {
	return &rules.Env{Result: map[string]any{}, Input: map[string]any{}, Context: map[string]any{}, Visits: map[string]int{}}
}

func TestWorkflow_Match(t *testing.T) {
	w := loadValid(t, "matcher.yaml")
	tests := []struct {
		name    string
		state   string
		agent   string
		trigger string
		env     func(e *rules.Env)
		want    string   // rule id, or "" for no match
		tried   []string // conditional rules evaluated, in order
	}{
		{"priority high before integer and normal", "S", "a", "go", func(e *rules.Env) { e.Result["n"] = 10 }, "high", []string{"high=true"}},
		{"integer 3 between high and normal", "S", "a", "go", func(e *rules.Env) { e.Result["n"] = 4 }, "int3", []string{"high=false", "int3=true"}},
		{"file order on equal priority normal and medium", "S", "a", "go", func(e *rules.Env) { e.Result["n"] = 2 }, "normal", []string{"high=false", "int3=false", "normal=true"}},
		{"low fallback is tried last", "S", "a", "go", func(e *rules.Env) { e.Result["n"] = 0 }, "fallback", []string{"high=false", "int3=false", "normal=false", "medium_tie=false"}},
		{"urgent and critical tie, file order", "S", "a", "tie", func(e *rules.Env) { e.Result["ok"] = true }, "urgent_first", []string{"urgent_first=true"}},
		{"critical then integer 1, file order", "S", "a", "tie", nil, "critical_second", []string{"urgent_first=false"}},
		{"result", "S", "a", "f_result", func(e *rules.Env) { e.Result["x"] = 1.0 }, "f_result", []string{"f_result=true"}},
		{"result false", "S", "a", "f_result", func(e *rules.Env) { e.Result["x"] = 2 }, "", []string{"f_result=false"}},
		{"input", "S", "a", "f_input", func(e *rules.Env) { e.Input["x"] = 1 }, "f_input", []string{"f_input=true"}},
		{"context", "S", "a", "f_context", func(e *rules.Env) { e.Context["k"] = "v" }, "f_context", []string{"f_context=true"}},
		{"context false", "S", "a", "f_context", func(e *rules.Env) { e.Context["k"] = "w" }, "", []string{"f_context=false"}},
		{"error", "S", "a", "error", func(e *rules.Env) {
			e.Error = rules.ErrorInfo{Message: "too slow", Retryable: false, Kind: "timeout"}
		}, "f_error", []string{"f_error=true"}},
		{"error retryable", "S", "a", "error", func(e *rules.Env) {
			e.Error = rules.ErrorInfo{Message: "too slow", Retryable: true, Kind: "timeout"}
		}, "", []string{"f_error=false"}},
		{"state", "S", "a", "f_state", func(e *rules.Env) { e.State = "S" }, "f_state", []string{"f_state=true"}},
		{"state false", "S", "a", "f_state", func(e *rules.Env) { e.State = "T" }, "", []string{"f_state=false"}},
		{"agent", "S", "a", "f_agent", func(e *rules.Env) { e.Agent = "a" }, "f_agent", []string{"f_agent=true"}},
		{"trigger list member", "S", "a", "f_trigger2", func(e *rules.Env) { e.Trigger = "f_trigger2" }, "f_trigger", []string{"f_trigger=true"}},
		{"trigger other member", "S", "a", "f_trigger", func(e *rules.Env) { e.Trigger = "f_trigger" }, "", []string{"f_trigger=false"}},
		{"step", "S", "a", "f_step", func(e *rules.Env) { e.Step = 4 }, "f_step", []string{"f_step=true"}},
		{"step false", "S", "a", "f_step", func(e *rules.Env) { e.Step = 3 }, "", []string{"f_step=false"}},
		{"visits with an unvisited state as 0", "S", "a", "f_visits", func(e *rules.Env) { e.Visits["S"] = 2 }, "f_visits", []string{"f_visits=true"}},
		{"visits nil map", "S", "a", "f_visits", func(e *rules.Env) { e.Visits = nil }, "", []string{"f_visits=false"}},
		{"attempt", "S", "a", "f_attempt", func(e *rules.Env) { e.Attempt = 2 }, "f_attempt", []string{"f_attempt=true"}},
		{"nil maps are empty", "S", "a", "f_nil", func(e *rules.Env) { e.Result, e.Input, e.Context = nil, nil, nil }, "f_nil", []string{"f_nil=true"}},
		{"missing key is nil", "S", "a", "f_missing", nil, "f_missing", []string{"f_missing=true"}},
		{"run-time errors count false", "S", "a", "bad", func(e *rules.Env) { e.Result["n"] = "many"; e.Result["flag"] = "yes" }, "bad_fallback", []string{"bad_compare=error", "bad_cast=error"}},
		{"parallel state is its own from", "P", "P", "joined", func(e *rules.Env) {
			e.Result["results"] = map[string]any{"p1": "yes"}
		}, "joined", []string{"joined=true"}},
		{"unconditional rule has no evaluation", "S", "a", "fan_out", nil, "plan", nil},
		{"agent that does not own the state", "S", "b", "done", nil, "", nil},
		{"unknown trigger", "S", "a", "nope", nil, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv()
			if tt.env != nil {
				tt.env(env)
			}
			m, err := w.Match(tt.state, tt.agent, tt.trigger, env)
			if tt.want == "" {
				var nm *rules.NoMatchError
				if !errors.As(err, &nm) {
					t.Fatalf("got rule %v, err %v, want *NoMatchError", m.Rule, err)
				}
				if !errors.Is(err, rules.ErrNoRuleMatched) {
					t.Errorf("errors.Is(err, ErrNoRuleMatched) = false for %v", err)
				}
				if got := tried(nm.Tried); !slices.Equal(got, tt.tried) {
					t.Errorf("got tried %v, want %v", got, tt.tried)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want rule %s", err, tt.want)
			}
			if m.Rule.ID != tt.want {
				t.Errorf("got rule %s, want %s", m.Rule.ID, tt.want)
			}
			if got := tried(m.Tried); !slices.Equal(got, tt.tried) {
				t.Errorf("got tried %v, want %v", got, tt.tried)
			}
		})
	}
}

func TestWorkflow_Match_NoMatchErrorText(t *testing.T) {
	w := loadValid(t, "matcher.yaml")
	tests := []struct {
		name    string
		trigger string
		env     func(e *rules.Env)
		want    string
	}{
		{
			"false conditions in order", "f_result", func(e *rules.Env) { e.Result["x"] = 2 },
			"rules: no rule matched in state S (agent a, trigger f_result): rule f_result: `result.x == 1` = false",
		},
		{
			"agent error quoted for error outcomes", "error", func(e *rules.Env) {
				e.Error = rules.ErrorInfo{Message: "upstream down", Retryable: true, Kind: "error"}
			},
			"rules: no rule matched in state S (agent a, trigger error): rule f_error: " +
				"`error.kind == \"timeout\" && !error.retryable && error.message contains \"slow\"` = false; agent error: upstream down",
		},
		{
			"no candidate at all", "nope", nil,
			"rules: no rule matched in state S (agent a, trigger nope): no rule has this agent and trigger",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv()
			if tt.env != nil {
				tt.env(env)
			}
			_, err := w.Match("S", "a", tt.trigger, env)
			if err == nil {
				t.Fatal("got no error, want no rule matched")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestWorkflow_Match_RuntimeErrorQuoted(t *testing.T) {
	w := loadValid(t, "matcher.yaml")
	env := newEnv()
	env.Result["n"] = "many"
	env.Result["flag"] = "yes"
	m, err := w.Match("S", "a", "bad", env)
	if err != nil {
		t.Fatalf("got error %v, want the fallback", err)
	}
	var ee *rules.EvalError
	if len(m.Tried) != 2 || !errors.As(m.Tried[0].Err, &ee) {
		t.Fatalf("got tried %v, want two evaluations with an *EvalError first", tried(m.Tried))
	}
	if ee.Source != "result.n > 1" || !errors.Is(m.Tried[0].Err, rules.ErrEval) {
		t.Errorf("got source %q, want %q matching ErrEval", ee.Source, "result.n > 1")
	}
	nm := &rules.NoMatchError{State: "S", Agent: "a", Trigger: "bad", Tried: m.Tried}
	want := "rules: no rule matched in state S (agent a, trigger bad): rule bad_compare: `result.n > 1` = error: " +
		ee.Message + "; rule bad_cast: `result.flag` = error: " + m.Tried[1].Err.(*rules.EvalError).Message
	if got := nm.Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if ee.Message == "" || m.Tried[1].Err.(*rules.EvalError).Message == "" {
		t.Errorf("got empty failure messages in %q", nm.Error())
	}
}

func TestWorkflow_Match_UnknownState(t *testing.T) {
	w := loadValid(t, "matcher.yaml")
	_, err := w.Match("NOPE", "a", "go", newEnv())
	if !errors.Is(err, rules.ErrUnknownState) {
		t.Errorf("got %v, want ErrUnknownState", err)
	}
}

func TestWorkflow_Match_NilEnv(t *testing.T) {
	w := loadValid(t, "matcher.yaml")
	m, err := w.Match("S", "a", "f_nil", nil)
	if err != nil || m.Rule.ID != "f_nil" {
		t.Errorf("got %v, %v, want rule f_nil", m.Rule, err)
	}
	m, err = w.Match("S", "a", "f_missing", nil)
	if err != nil || m.Rule.ID != "f_missing" {
		t.Errorf("got %v, %v, want rule f_missing", m.Rule, err)
	}
}

func TestWorkflow_Match_ConcurrentUse(t *testing.T) {
	w := loadValid(t, "matcher.yaml")
	done := make(chan error)
	for g := range 8 {
		go func() {
			var err error
			for i := range 200 {
				env := newEnv()
				env.Result["n"] = (g + i) % 12
				env.Result["flag"] = "x"
				m, e := w.Match("S", "a", "go", env)
				if e != nil {
					err = e
					break
				}
				n := (g + i) % 12
				want := map[bool]string{true: "high"}[n > 5]
				if want == "" {
					switch {
					case n > 3:
						want = "int3"
					case n > 1:
						want = "normal"
					default:
						want = "fallback"
					}
				}
				if m.Rule.ID != want {
					err = errors.New("got rule " + m.Rule.ID + ", want " + want)
					break
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestWorkflow_Match_LongCandidateList checks the Tried lists of a list too
// long for the ones precomputed at load, with and without run-time errors.
func TestWorkflow_Match_LongCandidateList(t *testing.T) {
	src := "workflow: long\ninitial: A\nagents: {a: {}}\nstates: {A: {agent: a}, Z: {terminal: true}}\nrules:\n"
	for i := range 20 {
		src += fmt.Sprintf("  - {id: r%02d, from: a, trigger: t, priority: %d, condition: result.n == %d, next: Z}\n", i, i+1, i)
	}
	src += "  - {id: last, from: a, trigger: t, priority: 99, next: Z}\n"
	w, err := rules.Parse("long.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		n     any
		want  string
		tried int
		errs  int
	}{
		{"first", 0, "r00", 1, 0},
		{"middle", 17, "r17", 18, 0},
		{"fallback", 99, "last", 20, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv()
			env.Result["n"] = tt.n
			m, err := w.Match("A", "a", "t", env)
			if err != nil || m.Rule.ID != tt.want {
				t.Fatalf("got %v, %v, want %s", m.Rule, err, tt.want)
			}
			got := tried(m.Tried)
			if len(got) != tt.tried {
				t.Fatalf("got %d evaluations %v, want %d", len(got), got, tt.tried)
			}
			for i, ev := range m.Tried {
				if want := i == len(m.Tried)-1 && m.Rule.Condition != nil; ev.Result != want || ev.Rule != w.Rules[i] {
					t.Errorf("evaluation %d: got %s, want rule r%02d = %v", i, got[i], i, want)
				}
			}
		})
	}
}
