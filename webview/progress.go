package webview

import (
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/batonhq/baton/engine"
)

// Bounds of a ProgressLog: it holds what a page shows of the runs under
// way, not a transcript. A long answer keeps its last maxProgressText
// bytes; past maxProgressRuns runs, the one quiet the longest is dropped.
const (
	maxProgressText = 16 << 10
	maxProgressRuns = 256
)

// RunProgress is what one run under way has said: its latest message and
// the text its deltas have streamed so far.
type RunProgress struct {
	Step    int
	Agent   string
	Message string
	// Text is the run's delta text, in the order it came; only its end
	// when the answer is long (Clipped).
	Text    string
	Clipped bool
}

// heard is a run in the log, with the number of the event heard of it
// last.
type heard struct {
	RunProgress
	seq uint64
}

// ProgressLog keeps the progress of the runs under way, from the engines'
// agent_progress events, for a Backend to show on Instance.Progress: the
// engine keeps only a run's latest progress, and a page that appends a
// streamed answer needs the deltas that came before. A run is forgotten
// when it reports, when its instance changes state and when the instance
// ends. Its methods are safe for concurrent use.
type ProgressLog struct {
	mu   sync.Mutex
	runs map[string]map[int]*heard // by instance, then step
	n    int
	seq  uint64
}

// NewProgressLog returns an empty log.
func NewProgressLog() *ProgressLog {
	return &ProgressLog{runs: map[string]map[int]*heard{}}
}

// Observe takes one engine event; it is an engine.Observer.
func (l *ProgressLog) Observe(ev engine.Event) {
	switch ev.Type {
	case engine.EventAgentProgress:
		if ev.Progress != nil {
			l.progress(ev)
		}
	case engine.EventAgentReported:
		l.mu.Lock()
		defer l.mu.Unlock()
		if runs := l.runs[ev.InstanceID]; runs != nil && runs[ev.Step] != nil {
			delete(runs, ev.Step)
			l.n--
			if len(runs) == 0 {
				delete(l.runs, ev.InstanceID)
			}
		}
	case engine.EventStateChanged, engine.EventCompleted, engine.EventFailed, engine.EventCancelled:
		// Every run of the state left is over: the runs of the next one
		// start after this event.
		l.mu.Lock()
		defer l.mu.Unlock()
		l.n -= len(l.runs[ev.InstanceID])
		delete(l.runs, ev.InstanceID)
	}
}

func (l *ProgressLog) progress(ev engine.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	runs := l.runs[ev.InstanceID]
	if runs == nil {
		runs = map[int]*heard{}
		l.runs[ev.InstanceID] = runs
	}
	r := runs[ev.Step]
	if r == nil || r.Agent != ev.Agent {
		if r == nil {
			if l.n >= maxProgressRuns {
				l.dropQuietest()
			}
			l.n++
		}
		r = &heard{RunProgress: RunProgress{Step: ev.Step, Agent: ev.Agent}}
		runs[ev.Step] = r
	}
	p := ev.Progress
	if p.Message != "" {
		r.Message = p.Message
	}
	if p.Delta != "" {
		r.Text += p.Delta
		if len(r.Text) > maxProgressText {
			r.Text, r.Clipped = tail(r.Text, maxProgressText), true
		}
	}
	l.seq++
	r.seq = l.seq
}

// dropQuietest forgets the run heard of least recently; the caller holds
// mu.
func (l *ProgressLog) dropQuietest() {
	var (
		inst string
		step int
		seq  uint64
	)
	for id, runs := range l.runs {
		for s, r := range runs {
			if inst == "" || r.seq < seq {
				inst, step, seq = id, s, r.seq
			}
		}
	}
	if inst == "" {
		return
	}
	delete(l.runs[inst], step)
	if len(l.runs[inst]) == 0 {
		delete(l.runs, inst)
	}
	l.n--
}

// Of returns the progress of instance's runs under way, by step.
func (l *ProgressLog) Of(instance string) []RunProgress {
	l.mu.Lock()
	defer l.mu.Unlock()
	runs := l.runs[instance]
	if len(runs) == 0 {
		return nil
	}
	out := make([]RunProgress, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.RunProgress)
	}
	slices.SortFunc(out, func(a, b RunProgress) int { return a.Step - b.Step })
	return out
}

// tail is the last n bytes of s or fewer, cut at a character's start.
func tail(s string, n int) string {
	s = s[len(s)-n:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}
