package rules

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/internal/suggest"
)

// Bounds that keep hostile input (alias bombs, self-referencing anchors)
// from making the loader hang or exhaust memory.
const (
	maxAliasHops   = 32
	maxMergeDepth  = 8
	maxLiteralSize = 100_000
	maxLiteralNest = 64
)

// field is one key/value pair of a YAML mapping.
type field struct {
	key, val *yaml.Node
}

// fieldSet is a mapping's fields by key, plus the mapping itself for
// errors about missing keys.
type fieldSet struct {
	node    *yaml.Node
	byKey   map[string]field
	ordered []field
}

func (fs fieldSet) get(key string) (field, bool) {
	f, ok := fs.byKey[key]
	return f, ok
}

// deref follows aliases to the node they stand for; nil for a broken chain.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i == maxAliasHops {
			return nil
		}
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an unsupported node"
}

// isNull reports whether n is an explicit or implicit YAML null.
func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// mapping returns the fields of mapping n (null counts as empty), with
// `<<` merge keys expanded, reporting duplicate and non-string keys.
// what names the mapping in errors ("agents", "rule", ...).
func (l *loader) mapping(n *yaml.Node, what string) (fieldSet, bool) {
	d := deref(n)
	fs := fieldSet{node: n, byKey: map[string]field{}}
	if isNull(n) {
		return fs, true
	}
	if d.Kind != yaml.MappingNode {
		l.errorf(n, "%s must be a mapping, got %s", what, kindName(d))
		return fs, false
	}
	fs.node = d
	l.collect(d, &fs, 0, true)
	return fs, true
}

func (l *loader) collect(m *yaml.Node, fs *fieldSet, depth int, explicit bool) {
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		kd := deref(k)
		if kd == nil || kd.Kind != yaml.ScalarNode {
			l.errorf(k, "mapping keys must be strings, got %s", kindName(kd))
			continue
		}
		if kd.Tag == "!!merge" || (kd.Value == "<<" && kd.Style == 0) {
			merges = append(merges, v)
			continue
		}
		if prev, dup := fs.byKey[kd.Value]; dup {
			// Explicit keys are collected before merged ones, which never
			// override them; a repeated explicit key is the author's mistake.
			if explicit {
				l.errorf(k, "duplicate key %q (first at %s)", kd.Value, posOf(prev.key))
			}
			continue
		}
		f := field{key: k, val: v}
		fs.byKey[kd.Value] = f
		fs.ordered = append(fs.ordered, f)
	}
	for _, mv := range merges {
		if depth >= maxMergeDepth {
			l.errorf(mv, "merge keys nested too deeply")
			return
		}
		src := deref(mv)
		var maps []*yaml.Node
		switch {
		case src != nil && src.Kind == yaml.MappingNode:
			maps = append(maps, src)
		case src != nil && src.Kind == yaml.SequenceNode:
			for _, c := range src.Content {
				if cd := deref(c); cd != nil && cd.Kind == yaml.MappingNode {
					maps = append(maps, cd)
				} else {
					l.errorf(c, "a merge key takes mappings, got %s", kindName(cd))
				}
			}
		default:
			l.errorf(mv, "a merge key takes a mapping or a list of mappings, got %s", kindName(src))
		}
		for _, mm := range maps {
			l.mergeBudget -= len(mm.Content)
			if l.mergeBudget < 0 {
				l.errorf(mv, "merge keys expand to too many values")
				return
			}
			if mm == m {
				l.errorf(mv, "a mapping cannot merge itself")
				continue
			}
			l.collect(mm, fs, depth+1, false)
		}
	}
}

// keySpec lists a mapping's allowed keys.
type keySpec struct {
	required []string
	optional []string
}

// checkKeys reports unknown and missing keys. A near miss of a missing
// required key is one error, on the unknown key. where is appended to the
// missing-key message (` in rule "r1"`, say).
func (l *loader) checkKeys(fs fieldSet, spec keySpec, where string) {
	allowed := append(slices.Clone(spec.required), spec.optional...)
	claimed := map[string]bool{}
	for _, f := range fs.ordered {
		name := deref(f.key).Value
		if slices.Contains(allowed, name) {
			continue
		}
		var missing []string
		for _, r := range spec.required {
			if _, ok := fs.byKey[r]; !ok {
				missing = append(missing, r)
			}
		}
		if s := suggest.Nearest(name, missing); s != "" {
			claimed[s] = true
			l.errorf(f.key, "unknown key %q (did you mean %q?)", name, s)
			continue
		}
		var absent []string
		for _, a := range allowed {
			if _, ok := fs.byKey[a]; !ok {
				absent = append(absent, a)
			}
		}
		if s := suggest.Nearest(name, absent); s != "" {
			l.errorf(f.key, "unknown key %q (did you mean %q?)", name, s)
		} else {
			l.errorf(f.key, "unknown key %q", name)
		}
	}
	for _, r := range spec.required {
		if _, ok := fs.byKey[r]; !ok && !claimed[r] {
			l.errorf(fs.node, "missing required key %q%s", r, where)
		}
	}
}

// scalar returns the value of scalar n, or reports that it is not one.
func (l *loader) scalar(n *yaml.Node, what string) (string, bool) {
	d := deref(n)
	if d == nil || d.Kind != yaml.ScalarNode || d.Tag == "!!null" {
		l.errorf(n, "%s must be a string, got %s", what, kindName(d))
		return "", false
	}
	return d.Value, true
}

// name returns a scalar that must match a name pattern.
func (l *loader) name(n *yaml.Node, what string, p pattern) (string, bool) {
	s, ok := l.scalar(n, what)
	if !ok {
		return "", false
	}
	if !p.match(s) {
		l.errorf(n, "invalid %s %q: must match %s", what, s, p.desc)
		return s, false
	}
	return s, true
}

// integer returns an integer scalar no smaller than lo.
func (l *loader) integer(n *yaml.Node, what string, lo int) (int, bool) {
	d := deref(n)
	if d == nil || d.Kind != yaml.ScalarNode || d.Tag != "!!int" {
		l.errorf(n, "%s must be an integer, got %s", what, kindName(d))
		return 0, false
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(d.Value, "_", ""), 0, 64)
	if err != nil || v > math.MaxInt32 || v < math.MinInt32 {
		l.errorf(n, "%s is out of range, got %s", what, d.Value)
		return 0, false
	}
	if int(v) < lo {
		if lo == 0 {
			l.errorf(n, "%s must not be negative, got %d", what, v)
		} else {
			l.errorf(n, "%s must be at least %d, got %d", what, lo, v)
		}
		return 0, false
	}
	return int(v), true
}

// boolean returns a true/false scalar.
func (l *loader) boolean(n *yaml.Node, what string) (bool, bool) {
	d := deref(n)
	if d == nil || d.Kind != yaml.ScalarNode || d.Tag != "!!bool" {
		l.errorf(n, "%s must be true or false, got %s", what, kindName(d))
		return false, false
	}
	var b bool
	if err := d.Decode(&b); err != nil {
		l.errorf(n, "%s must be true or false, got %s", what, kindName(d))
		return false, false
	}
	return b, true
}

// fraction returns a number in [0, 1].
func (l *loader) fraction(n *yaml.Node, what string) (float64, bool) {
	d := deref(n)
	if d == nil || d.Kind != yaml.ScalarNode || (d.Tag != "!!float" && d.Tag != "!!int") {
		l.errorf(n, "%s must be a number in [0, 1], got %s", what, kindName(d))
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(d.Value, "_", ""), 64)
	if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
		l.errorf(n, "%s must be a number in [0, 1], got %s", what, d.Value)
		return 0, false
	}
	return v, true
}

// duration returns a positive duration in time.ParseDuration syntax.
func (l *loader) duration(n *yaml.Node, what string) (time.Duration, bool) {
	s, ok := l.scalar(n, what)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		l.errorf(n, "invalid %s %q: %s", what, s, strings.TrimPrefix(err.Error(), "time: "))
		return 0, false
	}
	if d <= 0 {
		l.errorf(n, "%s must be positive, got %q", what, s)
		return 0, false
	}
	return d, true
}

// strings returns a string or a list of strings as a list; a scalar counts
// as a list of one when single is set.
func (l *loader) stringList(n *yaml.Node, what string, single bool) ([]*yaml.Node, bool) {
	d := deref(n)
	if d != nil && d.Kind == yaml.ScalarNode && single && d.Tag != "!!null" {
		return []*yaml.Node{n}, true
	}
	if d == nil || d.Kind != yaml.SequenceNode {
		if single {
			l.errorf(n, "%s must be a string or a list of strings, got %s", what, kindName(d))
		} else {
			l.errorf(n, "%s must be a list, got %s", what, kindName(d))
		}
		return nil, false
	}
	if len(d.Content) == 0 {
		l.errorf(n, "%s must not be empty", what)
		return nil, false
	}
	return d.Content, true
}

// plain converts a YAML node into plain Go values: map[string]any, []any,
// string, int, float64, bool or nil. budget bounds the nodes visited so
// that an alias bomb cannot blow up.
func (l *loader) plain(n *yaml.Node, depth int, budget *int) (any, bool) {
	*budget--
	if *budget < 0 {
		if *budget == -1 {
			l.errorf(n, "constraints are too large (more than %d values in the file)", maxLiteralSize)
		}
		return nil, false
	}
	if depth > maxLiteralNest {
		l.errorf(n, "constraints are nested too deeply (more than %d levels)", maxLiteralNest)
		return nil, false
	}
	d := deref(n)
	if d == nil {
		l.errorf(n, "alias chain is too long")
		return nil, false
	}
	switch d.Kind {
	case yaml.MappingNode:
		fs, _ := l.mapping(d, "value")
		out := make(map[string]any, len(fs.ordered))
		ok := true
		for _, f := range fs.ordered {
			v, vok := l.plain(f.val, depth+1, budget)
			ok = ok && vok
			out[deref(f.key).Value] = v
		}
		return out, ok
	case yaml.SequenceNode:
		out := make([]any, 0, len(d.Content))
		ok := true
		for _, c := range d.Content {
			v, vok := l.plain(c, depth+1, budget)
			ok = ok && vok
			out = append(out, v)
		}
		return out, ok
	case yaml.ScalarNode:
		return l.plainScalar(d)
	}
	l.errorf(n, "unsupported value")
	return nil, false
}

func (l *loader) plainScalar(n *yaml.Node) (any, bool) {
	switch n.Tag {
	case "!!null":
		return nil, true
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err == nil {
			return b, true
		}
	case "!!int":
		if v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil && v >= math.MinInt && v <= math.MaxInt {
			return int(v), true
		}
		var f float64
		if err := n.Decode(&f); err == nil {
			return f, true
		}
	case "!!float":
		var f float64
		if err := n.Decode(&f); err == nil {
			return f, true
		}
	default:
		return n.Value, true
	}
	l.errorf(n, "invalid value %q", n.Value)
	return nil, false
}
