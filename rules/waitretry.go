package rules

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

var waitKeys = keySpec{required: []string{"signals"}}

var backoffKeys = keySpec{required: []string{"initial"}, optional: []string{"rate", "max", "jitter"}}

// Jitter strategies of a backoff object.
const (
	JitterNone = "none"
	JitterFull = "full"
)

var jitters = []string{JitterNone, JitterFull}

// ErrorKinds are the kinds of failure the engine itself gives a run; agents
// may name any other kind.
var ErrorKinds = []string{"error", "timeout", "heartbeat", "panic", "invalid_result", "transport", "rejected"}

// wait decodes a state's `wait: {signals: [...]}`.
func (l *loader) wait(s *State, n *yaml.Node) {
	s.Wait = &Wait{}
	fs, ok := l.mapping(n, "wait")
	if !ok {
		return
	}
	l.checkKeys(fs, waitKeys, " in wait")
	f, ok := fs.get("signals")
	if !ok {
		return
	}
	items, _ := l.stringList(f.val, "signals", true)
	seen := map[string]*yaml.Node{}
	for _, it := range items {
		name, ok := l.name(it, "signal", triggerName)
		if !ok {
			continue
		}
		if name == "timeout" {
			// Every other name is free: a wait state runs no agent, so the
			// engine's other outcomes never come from it.
			l.errorf(it, "signal %q is the outcome of the wait's timeout", name)
			continue
		}
		if prev, dup := seen[name]; dup {
			l.errorf(it, "signal %q is listed twice (first at %s)", name, posOf(prev))
			continue
		}
		seen[name] = it
		s.Wait.Signals = append(s.Wait.Signals, name)
	}
}

// retryPolicy decodes the parts of a retry policy beyond max: a backoff
// list or object, and the kinds retried (on) or not (except).
func (l *loader) retryPolicy(r *Retry, fs fieldSet) {
	if f, ok := fs.get("backoff"); ok {
		if d := deref(f.val); d != nil && d.Kind == yaml.MappingNode {
			l.backoffObject(r, f.val)
		} else {
			items, _ := l.stringList(f.val, "backoff", true)
			for _, it := range items {
				if d, ok := l.duration(it, "backoff"); ok {
					r.Backoff = append(r.Backoff, d)
				}
			}
		}
	}
	if f, ok := fs.get("on"); ok {
		r.On = l.kinds(f.val, "retry.on")
	}
	if f, ok := fs.get("except"); ok {
		r.Except = l.kinds(f.val, "retry.except")
		for _, k := range r.Except {
			if slices.Contains(r.On, k) {
				l.errorf(f.val, "kind %q is both in retry.on and retry.except", k)
			}
		}
	}
}

func (l *loader) backoffObject(r *Retry, n *yaml.Node) {
	fs, _ := l.mapping(n, "backoff")
	l.checkKeys(fs, backoffKeys, " in backoff")
	r.Rate = 2
	if f, ok := fs.get("initial"); ok {
		r.Initial, _ = l.duration(f.val, "backoff.initial")
	}
	if f, ok := fs.get("rate"); ok {
		if v, ok := l.rate(f.val); ok {
			r.Rate = v
		}
	}
	if f, ok := fs.get("max"); ok {
		r.MaxDelay, _ = l.duration(f.val, "backoff.max")
		if r.Initial > 0 && r.MaxDelay > 0 && r.MaxDelay < r.Initial {
			l.errorf(f.val, "backoff.max %s is below backoff.initial %s", r.MaxDelay, r.Initial)
		}
	}
	r.Jitter = JitterNone
	if f, ok := fs.get("jitter"); ok {
		if v, ok := l.scalar(f.val, "backoff.jitter"); ok {
			if slices.Contains(jitters, v) {
				r.Jitter = v
			} else {
				l.errorf(f.val, "unknown jitter %q%s: want none or full", v, didYouMean(v, jitters))
			}
		}
	}
}

// rate returns a backoff rate: a number of at least 1.
func (l *loader) rate(n *yaml.Node) (float64, bool) {
	d := deref(n)
	if d == nil || d.Kind != yaml.ScalarNode || (d.Tag != "!!float" && d.Tag != "!!int") {
		l.errorf(n, "backoff.rate must be a number, got %s", kindName(d))
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(d.Value, "_", ""), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 1 || v > 100 {
		l.errorf(n, "backoff.rate must be a number from 1 to 100, got %s", d.Value)
		return 0, false
	}
	return v, true
}

// kinds decodes a list of error kinds.
func (l *loader) kinds(n *yaml.Node, what string) []string {
	items, _ := l.stringList(n, what, true)
	var out []string
	for _, it := range items {
		k, ok := l.name(it, "error kind", identName)
		if !ok {
			continue
		}
		if slices.Contains(out, k) {
			l.errorf(it, "kind %q is listed twice", k)
			continue
		}
		out = append(out, k)
	}
	return out
}
