package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/batonhq/baton/ops"
)

// clockOf is how wfrun prints a time of today's work: the local clock,
// to the second.
func clockOf(t time.Time) string { return t.Local().Format("15:04:05") }

// pendingLine says what one pending entry waits for: "waiting for `seller`
// (step 3, attempt 2) since 10:02:11, deadline 10:04:11", "waiting for
// signal approve|reject since 10:02:11".
func pendingLine(p ops.Pending) string {
	var b strings.Builder
	switch p.Kind {
	case "wait":
		fmt.Fprintf(&b, "waiting for signal %s", strings.Join(p.Signals, "|"))
	case "child":
		fmt.Fprintf(&b, "waiting for child %s (workflow %s)", p.Child, p.Agent)
	case "foreach":
		fmt.Fprintf(&b, "waiting for `%s` (item, step %d, attempt %d)", p.Agent, p.Step, p.Attempt)
	default:
		fmt.Fprintf(&b, "waiting for `%s` (step %d, attempt %d)", p.Agent, p.Step, p.Attempt)
	}
	fmt.Fprintf(&b, " since %s", clockOf(p.Since))
	if p.Deadline != nil {
		fmt.Fprintf(&b, ", deadline %s", clockOf(*p.Deadline))
	}
	if p.Transport != "" && p.Transport != ops.TransportGo {
		fmt.Fprintf(&b, " [%s]", p.Transport)
	}
	if pr := p.Progress; pr != nil && pr.Message != "" {
		fmt.Fprintf(&b, ": %s", pr.Message)
	}
	return b.String()
}

// onLimitNote says that a completed instance went through on_limit.
func onLimitNote(i instance) string {
	if i.OnLimit == "" {
		return ""
	}
	return "completed through on_limit (" + i.OnLimit + " reached)"
}

// printWaits prints a line per wait of i, in the form of watch's event
// lines: what watch shows when an instance enters a wait state (the
// engine has no event of its own for it). A wait in shown is not printed
// again (a stream opened again replays events).
func printWaits(w io.Writer, i instance, shown map[string]bool) error {
	for _, p := range i.Pending {
		key := p.State + "@" + p.Since.String()
		if p.Kind != "wait" || shown[key] {
			continue
		}
		shown[key] = true
		if _, err := fmt.Fprintf(w, "%s  step %-3d %-15s %s\n", p.Since.Local().Format("15:04:05.000"), i.Step, "waiting", pendingLine(p)); err != nil {
			return err
		}
	}
	return nil
}
