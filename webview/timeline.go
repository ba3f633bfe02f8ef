package webview

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/fsm"
	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/rules"
)

// row is one history entry as the timeline shows it.
type row struct {
	Seq         int
	Time        time.Time
	Step        int
	Kind        record.Kind
	State       string
	Agent       string
	Summary     string
	Task        string
	Input       string
	Result      string
	ResultLabel string
	Condition   string
	Error       string
	Expand      bool
}

// runInput is what a step's run was given: its task and payload.
type runInput struct {
	task    string
	payload map[string]any
}

// timeline turns a history into rows; an agent_run row carries the task and
// payload its run was sent with.
func timeline(entries []record.Entry) []row {
	inputs := map[int]runInput{}
	rows := make([]row, 0, len(entries))
	for _, e := range entries {
		r := row{Seq: e.Seq, Time: e.Time, Step: e.Step, Kind: e.Kind, State: e.State, Agent: e.Agent, Error: e.Error, ResultLabel: "Result"}
		if len(e.Result) > 0 {
			r.Result = prettyJSON(e.Result)
		}
		switch e.Kind {
		case record.KindStarted:
			r.Summary = "started in " + e.State
			r.ResultLabel = "Input"
		case record.KindDispatch, engine.KindResumed:
			inputs[e.Step] = runInput{task: e.Detail, payload: inputs[e.Step].payload}
			r.Summary = fmt.Sprintf("work sent to %s (attempt %d)", e.Agent, max(e.Attempt, 1))
			if e.Kind == engine.KindResumed {
				r.Summary = fmt.Sprintf("run of %s resumed (attempt %d)", e.Agent, max(e.Attempt, 1))
			}
			r.Task = e.Detail
		case record.KindHandoff:
			inputs[e.Step] = runInput{task: e.Detail, payload: e.Result}
			r.Summary = fmt.Sprintf("hand-off %s → %s (%s)", orDash(e.From), e.To, join(e.Reason, ruleText(e.Rule)))
			r.Task = e.Detail
			r.ResultLabel = "Payload"
		case record.KindAgentRun:
			in := inputs[e.Step]
			r.Task = in.task
			if len(in.payload) > 0 {
				r.Input = prettyJSON(in.payload)
			}
			if e.Error != "" {
				r.Summary = fmt.Sprintf("%s failed (%s)", e.Agent, orDash(e.ErrorKind))
			} else {
				r.Summary = fmt.Sprintf("%s reported %s", e.Agent, e.Trigger)
			}
		case record.KindOutcome:
			r.Summary = "outcome " + e.Trigger
			if e.ErrorKind != "" {
				r.Summary += fmt.Sprintf(" (%s, retryable %t)", e.ErrorKind, e.Retryable)
			}
		case record.KindCondition:
			r.Summary = fmt.Sprintf("the condition of rule %s failed and counted as false", e.Rule)
			r.Condition = e.Condition
		case record.KindRuleFired:
			r.Summary = fmt.Sprintf("rule %s fired (p%d) → %s", e.Rule, e.Priority, e.Next)
			if e.To != "" {
				r.Summary += ", to " + e.To
			}
		case record.KindTransition:
			r.Summary = e.State + " → " + e.Next
		case record.KindRetry:
			r.Summary = fmt.Sprintf("retry: attempt %d in %s (%s)", e.Attempt, e.Delay, orDash(e.ErrorKind))
		case record.KindLimitHit:
			r.Summary = fmt.Sprintf("limit %s hit → %s", e.Limit, orDash(e.Next))
		case record.KindWaiting:
			r.Summary = "waiting for " + e.Detail
			if e.Delay > 0 {
				r.Summary += fmt.Sprintf(" (timeout %s)", e.Delay)
			}
		case record.KindSignal:
			r.Summary = "signal " + e.Trigger + " received"
			r.ResultLabel = "Data"
		case record.KindSelected:
			r.Summary = fmt.Sprintf("a user handed the step from %s to %s", e.From, e.To)
			if e.Detail != "" {
				r.Summary += ": " + e.Detail
			}
		case record.KindFinalNotice:
			r.Summary = fmt.Sprintf("final notice %s → %s", orDash(e.From), e.To)
		case record.KindNoticeTaken:
			r.Summary = "final notice taken"
		case record.KindJoined:
			r.Summary = "joined: " + e.Trigger
			if e.Detail != "" {
				r.Summary += " (" + e.Detail + ")"
			}
		case record.KindReturned:
			r.Summary = fmt.Sprintf("result returned from %s to %s", e.From, e.To)
		case record.KindLateReply:
			r.Summary = "late reply " + e.Trigger + " (ignored)"
		case record.KindCompleted:
			r.Summary = "completed in " + e.State
		case record.KindFailed:
			r.Summary = fmt.Sprintf("failed in %s (%s)", e.State, orDash(e.ErrorKind))
		case record.KindCanceled:
			r.Summary = "cancelled in " + e.State
		default:
			r.Summary = join(string(e.Kind), e.Detail)
		}
		r.Expand = r.Task != "" || r.Input != "" || r.Result != "" || r.Condition != "" || r.Error != ""
		rows = append(rows, r)
	}
	return rows
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ruleText(id string) string {
	if id == "" {
		return ""
	}
	return "rule " + id
}

func join(parts ...string) string {
	out := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ", ")
}

// marks are the states an instance visited, is in, and failed in.
type marks struct {
	visited []string
	current string
	failed  string
}

func marksOf(in Instance, entries []record.Entry) marks {
	seen := map[string]bool{}
	var m marks
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			m.visited = append(m.visited, s)
		}
	}
	for _, e := range entries {
		switch e.Kind {
		case record.KindStarted:
			add(e.State)
		case record.KindTransition:
			add(e.State)
			add(e.Next)
		}
	}
	add(in.State)
	if in.Status == StatusFailed || in.Status == StatusCancelled {
		m.failed = in.State
	} else {
		m.current = in.State
	}
	return m
}

// markedDiagram is the workflow's Mermaid diagram with the states of m
// classed visited, current and failed. State names are identifiers (the
// loader checks them), so they are safe in a class statement; a name the
// workflow does not have is left out.
func markedDiagram(def *rules.Workflow, m marks) string {
	var b strings.Builder
	b.WriteString(fsm.Mermaid(def))
	b.WriteString("    classDef visited fill:#dbeafe,stroke:#1d4ed8\n")
	b.WriteString("    classDef current fill:#fde68a,stroke:#b45309,stroke-width:3px\n")
	b.WriteString("    classDef failed fill:#fecaca,stroke:#b91c1c,stroke-width:3px\n")
	known := func(s string) bool { _, ok := def.State(s); return ok }
	var visited []string
	for _, s := range m.visited {
		if known(s) && s != m.current && s != m.failed {
			visited = append(visited, s)
		}
	}
	slices.Sort(visited)
	if len(visited) > 0 {
		fmt.Fprintf(&b, "    class %s visited\n", strings.Join(visited, ","))
	}
	if m.current != "" && known(m.current) {
		fmt.Fprintf(&b, "    class %s current\n", m.current)
	}
	if m.failed != "" && known(m.failed) {
		fmt.Fprintf(&b, "    class %s failed\n", m.failed)
	}
	return b.String()
}
