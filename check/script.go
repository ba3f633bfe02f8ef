package check

import (
	"fmt"
	"maps"
	"time"

	"github.com/batonhq/baton/rules"
)

// script is a scenario under construction: the instance as it would be
// after the transitions so far.
type script struct {
	c      *checker
	file   scenarioFile
	env    rules.Env                 // input, context, step and visits so far
	items  map[string]items          // by foreach state: its items as last entered
	inputs map[string]map[string]any // by workflow state: its child's input as last entered
}

// script builds the scenario of an uncovered outcome, or says why it
// cannot.
func (c *checker) script(f Finding) (*script, string) {
	w := c.w
	sc := &script{c: c, items: map[string]items{}, inputs: map[string]map[string]any{}, file: scenarioFile{
		Scenario: f.Message,
		Agents:   map[string][]reply{},
		Expect:   expectation{Status: "failed", Error: "no rule matched", States: f.Path},
	}}
	for _, st := range f.Steps {
		if st.Rule == "" {
			return nil, "its shortest path goes through a limit hit"
		}
	}
	// The input: the witness's when its conditions read it, else the
	// declared fields' zero values.
	input := map[string]any{}
	if f.Witness != nil && len(f.Witness.Input) > 0 {
		input = cloneMap(f.Witness.Input)
	}
	fill(input, w.Input)
	sc.env = rules.Env{Input: input, Context: map[string]any{}, Visits: map[string]int{w.Initial: 1}}
	init, _ := w.State(w.Initial)
	if runsPerVisit(init) > 0 {
		sc.env.Step = 1
	}
	switch {
	case init.Iterates():
		return nil, "its initial state is a foreach state, whose items the written scenarios do not choose"
	case init.Calls():
		in, err := init.Child.EvalInput(init.Name, &sc.env)
		if err != nil {
			return nil, err.Error()
		}
		sc.inputs[init.Name] = in
	}
	for i, st := range f.Steps {
		then := f.Trigger
		if i+1 < len(f.Steps) {
			then = f.Steps[i+1].Trigger
		}
		if why := sc.advance(st, then); why != "" {
			return nil, why
		}
	}
	if why := sc.last(f); why != "" {
		return nil, why
	}
	if len(input) > 0 {
		sc.file.Input = input
	}
	if len(sc.file.Agents) == 0 {
		sc.file.Agents = nil
	}
	return sc, ""
}

// outcomeOf finds the outcome spec of trigger in state s.
func (c *checker) outcomeOf(s *rules.State, trigger string) (outcome, bool) {
	for _, o := range c.outs[s.Name] {
		if o.trigger == trigger {
			return o, true
		}
	}
	return outcome{}, false
}

// scriptable says why the outcome trigger of s cannot be scripted, or "".
func scriptable(s *rules.State, trigger string) string {
	switch {
	case s.Terminal:
		return "its path runs state " + s.Name + ", which the written scenarios do not drive"
	}
	return ""
}

// timeoutRuns is how a script makes agent state s time out: the kind of
// the failure, the delay past which every run has failed that way, and how
// many runs that takes (the first and each retry of that kind).
func timeoutRuns(s *rules.State) (kind string, delay time.Duration, runs int) {
	kind = "timeout"
	if s.Heartbeat > 0 && (s.Timeout == 0 || s.Heartbeat < s.Timeout) {
		kind = "heartbeat"
	}
	runs = 1
	if s.Retry.Retries(kind) {
		runs += s.Retry.Max
	}
	return kind, max(s.Timeout, s.Heartbeat) + time.Second, runs
}

// problemAt is the search for the values of outcome trigger in state s
// given what the instance holds so far: only the result (and an error's
// kind and message) are free.
func (sc *script) problemAt(s *rules.State, o outcome, cands []*rules.Rule, want int) *problem {
	p := sc.c.problem(s, o, cands, want)
	p.base.Input, p.base.Context, p.base.Visits, p.base.Step = sc.env.Input, sc.env.Context, sc.env.Visits, sc.env.Step
	delete(p.free, "input")
	delete(p.free, "context")
	delete(p.free, "step")
	delete(p.free, "visits")
	p.noRetry = true
	if o.trigger == "timeout" && !s.Waits() {
		kind, _, runs := timeoutRuns(s)
		p.kinds, p.base.Error.Kind, p.base.Error.Retryable = []string{kind}, kind, true
		p.base.Attempt = runs
		delete(p.free, "attempt")
		return p
	}
	if p.base.Attempt > 0 {
		p.base.Attempt = 1
		// A failure may come after retries: the script fails the runs
		// before it with retryable errors of the same kind.
		if o.trigger != "error" {
			delete(p.free, "attempt")
		}
	}
	if s.Waits() && o.trigger != "timeout" {
		p.result = nil
	}
	return p
}

// advance scripts one transition of the path and applies it; then is the
// outcome the path needs next, which says whether a foreach state entered
// must have items.
func (sc *script) advance(st Step, then string) string {
	c := sc.c
	s, _ := c.w.State(st.State)
	if why := scriptable(s, st.Trigger); why != "" {
		return why
	}
	o, ok := c.outcomeOf(s, st.Trigger)
	if !ok {
		return "state " + s.Name + " cannot produce " + st.Trigger
	}
	cands := c.rulesFor(s, st.Trigger)
	want := -1
	for i, r := range cands {
		if r.ID == st.Rule {
			want = i
		}
	}
	if want < 0 {
		return "rule " + st.Rule + " is not tried for " + st.Trigger
	}
	p := sc.problemAt(s, o, cands, want)
	fo, why := sc.fix(p, s, st.Trigger)
	if why != "" {
		return why
	}
	v, ans := solve(p, c.parse)
	if v != found {
		return fmt.Sprintf("no values make rule %s fire in %s", st.Rule, s.Name)
	}
	rule := cands[want]
	next, _ := c.w.State(rule.Next)
	if next != nil && next.Iterates() && then != "error" {
		// The foreach state entered needs items: the result that enters it
		// carries them.
		if f := listField(rule, next); f != "" {
			if _, isList := ans.env.Result[f].([]any); !isList {
				ans.env.Result = cloneMap(ans.env.Result)
				ans.env.Result[f] = []any{"item0"}
				if !p.selects(&ans.env) || p.result.Check(ans.env.Result) != nil {
					return "no values give foreach state " + next.Name + " its items"
				}
			}
		}
	}
	if fo != nil {
		sc.playFanOut(*fo)
	} else if !sc.play(s, st.Trigger, ans.env) {
		return "the failure of " + s.Name + " on its attempt " + fmt.Sprint(ans.env.Attempt) + " is not retried to get there"
	}
	if ans.env.Attempt > 1 {
		sc.env.Step += ans.env.Attempt - 1
	}
	merged, err := rule.EvalContext(&ans.env)
	if err != nil {
		return err.Error()
	}
	ctx := maps.Clone(sc.env.Context)
	maps.Copy(ctx, merged)
	sc.env.Context = ctx
	visits := maps.Clone(sc.env.Visits)
	visits[rule.Next]++
	sc.env.Visits = visits
	switch {
	case next == nil:
	case next.Iterates():
		env := ans.env
		env.Context = ctx
		list, err := c.w.Items(next, &env)
		sc.items[next.Name] = items{list: list, err: err}
		sc.env.Step += len(list)
	case next.Parallel():
		sc.env.Step += len(next.Agents)
	case next.Calls():
		env := ans.env
		env.Context = ctx
		in, err := next.Child.EvalInput(next.Name, &env)
		if err != nil {
			return err.Error()
		}
		sc.inputs[next.Name] = in
	case runsPerVisit(next) > 0:
		sc.env.Step++
	}
	return ""
}

// fix fixes what a parallel or foreach state's outcome carries in p (its
// result and error come from the script, not from a choice), and returns
// how to script it; nil for other states.
func (sc *script) fix(p *problem, s *rules.State, trigger string) (*fanOut, string) {
	if s.Calls() {
		result, why := sc.childRun(s, trigger)
		if why != "" {
			return nil, why
		}
		p.base.Result, p.base.Error, p.base.Attempt = result, rules.ErrorInfo{}, 0
		p.kinds = noFailure
		delete(p.free, "result")
		delete(p.free, "error")
		delete(p.free, "attempt")
		return &fanOut{}, ""
	}
	if !s.Parallel() && !s.Iterates() {
		return nil, ""
	}
	fo, why := sc.fanOut(s, trigger)
	if why != "" {
		return nil, why
	}
	p.base.Result, p.base.Error, p.base.Attempt = fo.result, fo.err, 0
	p.kinds = []string{fo.err.Kind}
	delete(p.free, "result")
	delete(p.free, "error")
	delete(p.free, "attempt")
	return &fo, ""
}

// playFanOut adds the replies of a fan-out's runs.
func (sc *script) playFanOut(fo fanOut) {
	for _, a := range sortedKeys(fo.replies) {
		sc.file.Agents[a] = append(sc.file.Agents[a], fo.replies[a]...)
	}
}

// last scripts the witness: the outcome that matches no rule.
func (sc *script) last(f Finding) string {
	c := sc.c
	s, _ := c.w.State(f.State)
	if why := scriptable(s, f.Trigger); why != "" {
		return why
	}
	o, ok := c.outcomeOf(s, f.Trigger)
	if !ok {
		return "state " + s.Name + " cannot produce " + f.Trigger
	}
	cands := c.rulesFor(s, f.Trigger)
	env := rules.Env{Input: sc.env.Input, Context: sc.env.Context, Result: map[string]any{}}
	p := sc.problemAt(s, o, cands, -1)
	fo, why := sc.fix(p, s, f.Trigger)
	if why != "" {
		return why
	}
	if fo != nil {
		if len(cands) > 0 {
			if v, _ := solve(p, c.parse); v != found {
				return "no values reach the outcome along its shortest path"
			}
		}
		sc.playFanOut(*fo)
		return ""
	}
	if len(cands) > 0 {
		v, ans := solve(p, c.parse)
		if v != found {
			return "no values reach the outcome along its shortest path"
		}
		env = ans.env
	} else if o.result != nil {
		fill(env.Result, o.result)
	}
	if o.kinds != nil && o.kinds[0] != "" && env.Error.Kind == "" {
		env.Error.Kind = o.kinds[0]
	}
	if !sc.play(s, f.Trigger, env) {
		return "the failure of " + s.Name + " on its attempt " + fmt.Sprint(env.Attempt) + " is not retried to get there"
	}
	return ""
}

// play adds the replies (or signal) that make s produce trigger with env's
// result and error; false when no script can.
func (sc *script) play(s *rules.State, trigger string, env rules.Env) bool {
	if s.Waits() {
		if trigger != "timeout" {
			sc.file.Signals = append(sc.file.Signals, signal{Signal: trigger, Data: nonEmpty(env.Result)})
		}
		return true
	}
	var rp reply
	switch trigger {
	case "timeout":
		_, delay, runs := timeoutRuns(s)
		// What the run would have said comes too late to count.
		rp = reply{Error: "late", Delay: delay.String()}
		if ts := sc.c.triggers[s.Agent]; len(ts) > 0 {
			rp = reply{Trigger: ts[0], Delay: delay.String()}
		}
		for range runs {
			sc.file.Agents[s.Agent] = append(sc.file.Agents[s.Agent], rp)
		}
		return true
	case "error":
		no := false
		rp = reply{Error: env.Error.Message, Retryable: &no}
		if rp.Error == "" {
			rp.Error = "failed"
		}
		if env.Error.Kind != "error" {
			rp.Kind = env.Error.Kind
		}
		if env.Attempt > 1 && !s.Retry.Retries(rp.Kind) {
			return false
		}
		for range env.Attempt - 1 {
			sc.file.Agents[s.Agent] = append(sc.file.Agents[s.Agent], reply{Error: rp.Error, Kind: rp.Kind})
		}
	case "rejected":
		rp = reply{Reject: "refused"}
	default:
		rp = reply{Trigger: trigger, Result: nonEmpty(env.Result)}
	}
	sc.file.Agents[s.Agent] = append(sc.file.Agents[s.Agent], rp)
	return true
}
