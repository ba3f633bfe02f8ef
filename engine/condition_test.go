package engine_test

import (
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

func TestEngine_ConditionError_RecordedCountedAndTold(t *testing.T) {
	w, err := rules.Parse("cond.yaml", []byte(`
workflow: cond
initial: CHECK
agents: {checker: {}}
states:
  CHECK: {agent: checker}
  BIG: {terminal: true}
  FALLBACK: {terminal: true}
rules:
  - {id: big, from: checker, trigger: checked, condition: 'result.number > 100000', next: BIG}
  - {id: fallback, from: checker, trigger: checked, next: FALLBACK}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := newSimRunOf(t, w, map[string][]reply{"checker": {ok("checked", map[string]any{"number": "ABC-123"})}})
	res, h := r.finish(nil)
	wantCompleted(t, res, "FALLBACK") // the failed condition counts as false
	cond := entries(h, record.KindCondition)
	if len(cond) != 1 || cond[0].Rule != "big" || cond[0].Error == "" {
		t.Fatalf("got condition entries %+v, want one for rule big with its error", cond)
	}
	if got := r.eng.Metrics().ConditionErrors; got != 1 {
		t.Errorf("ConditionErrors: got %d, want 1", got)
	}
	var told []engine.Event
	for _, ev := range r.events {
		if ev.Type == engine.EventConditionError {
			told = append(told, ev)
		}
	}
	if len(told) != 1 || told[0].Rule != "big" || told[0].Err == nil {
		t.Errorf("got condition_error events %+v, want one for rule big", told)
	}
}
