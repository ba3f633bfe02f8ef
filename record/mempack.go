package record

import (
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/registry"
)

// packedEntry is an Entry as a MemStore keeps it: its sixteen strings end
// to end in one string shared by the step's entries, with their ends.
// An Entry holds 19 pointers in 384 bytes; a packedEntry, 3 in 192. The
// finished histories a MemStore retains (10,000 by default) are most of a
// busy engine's heap, and the garbage collector scans each pointer of
// them on every cycle.
type packedEntry struct {
	time      time.Time
	result    map[string]any
	strs      string // the step's strings; this entry's are strs[start:ends[nStrings-1]]
	start     uint32
	ends      [nStrings]uint32
	seq       int
	step      int
	attempt   int
	priority  int
	index     int
	delay     time.Duration
	in, out   int64
	cost      float64
	retryable bool
}

// nStrings is how many string fields an Entry has.
const nStrings = 16

// entryStrings lists e's string fields in the order packedEntry keeps them.
func entryStrings(e *Entry) [nStrings]string {
	return [nStrings]string{string(e.Kind), e.State, e.Agent, e.Trigger, e.Rule, e.Condition, e.From, e.To,
		e.Next, e.HandoffID, e.Error, e.ErrorKind, e.Limit, e.Reason, e.Detail, e.Usage.Model}
}

// packStep packs one step's entries; ok is false if their strings are too
// long for the 32-bit ends (4 GiB), and the caller keeps them unpacked.
func packStep(entries []Entry) (out []packedEntry, ok bool) {
	total := 0
	for k := range entries {
		for _, s := range entryStrings(&entries[k]) {
			total += len(s)
		}
	}
	if total > 1<<32-1 {
		return nil, false
	}
	var b strings.Builder
	b.Grow(total)
	out = make([]packedEntry, len(entries))
	for k := range entries {
		e := &entries[k]
		p := &out[k]
		p.start = uint32(b.Len())
		for j, s := range entryStrings(e) {
			b.WriteString(s)
			p.ends[j] = uint32(b.Len())
		}
		p.time, p.result = e.Time, e.Result
		p.seq, p.step, p.attempt, p.priority, p.index = e.Seq, e.Step, e.Attempt, e.Priority, e.Index
		p.delay, p.in, p.out, p.cost, p.retryable = e.Delay, e.Usage.InputTokens, e.Usage.OutputTokens, e.Usage.Cost, e.Retryable
	}
	strs := b.String()
	for k := range out {
		out[k].strs = strs
	}
	return out, true
}

// entry unpacks p.
func (p *packedEntry) entry() Entry {
	var f [nStrings]string
	at := p.start
	for j, end := range p.ends {
		f[j] = p.strs[at:end]
		at = end
	}
	return Entry{
		Seq: p.seq, Time: p.time, Kind: Kind(f[0]), Step: p.step, Attempt: p.attempt, State: f[1], Agent: f[2],
		Trigger: f[3], Rule: f[4], Priority: p.priority, Condition: f[5], From: f[6], To: f[7], Next: f[8],
		HandoffID: f[9], Result: p.result, Error: f[10], Retryable: p.retryable, ErrorKind: f[11], Limit: f[12],
		Reason: f[13], Detail: f[14], Delay: p.delay, Index: p.index,
		Usage: registry.Usage{InputTokens: p.in, OutputTokens: p.out, Cost: p.cost, Model: f[15]},
	}
}

// memStep is one commit's entries as a MemStore keeps them: packed, or as
// they came when they could not be packed.
type memStep struct {
	packed []packedEntry
	plain  []Entry
}

// keepStep makes the memStep of a commit's entries, which the caller
// reuses after Commit.
func keepStep(entries []Entry) memStep {
	if p, ok := packStep(entries); ok {
		return memStep{packed: p}
	}
	return memStep{plain: slices.Clone(entries)}
}

// appendTo appends the step's entries to out.
func (m *memStep) appendTo(out []Entry) []Entry {
	if m.plain != nil {
		return append(out, m.plain...)
	}
	for k := range m.packed {
		out = append(out, m.packed[k].entry())
	}
	return out
}
