package record

import (
	"time"

	"github.com/batonhq/baton/registry"
)

// memSnap is a Snapshot as a MemStore keeps it: 168 bytes where a Snapshot
// takes 320, so that an instance's record fits in 256 bytes, not 512 (an
// idle instance holds little else in the store). What the instances of a
// workflow version share is kept once for them, the status as a number,
// and the fields most instances leave empty (an error, a cancel reason,
// usage) aside. Every field comes back as it was given, times included;
// the maps of a finished instance come back equal, decoded from its log.
type memSnap struct {
	id, state, outcome string
	wf                 *memWorkflow
	step, attempt      int
	commits            int
	visits             map[string]int
	input, context     map[string]any
	created, updated   time.Time
	rare               *memRare // nil when its fields are empty
	status             uint8    // statusCode of the status
	packed             bool     // visits, input and context are in the instance's log (see memLog.packMaps)
}

// memWorkflow is what a Snapshot says of its instance's workflow.
type memWorkflow struct {
	name    string
	version int
	hash    string
}

// memRare holds the fields of a Snapshot that most instances leave empty.
type memRare struct {
	err, cancelReason string
	usage             registry.Ledger
	status            Status // when statusCode has no number for it
}

// statusCode is the number a memSnap keeps for status: its place in "",
// running, completed, failed, canceled; statusRare for any other.
func statusCode(status Status) uint8 {
	switch status {
	case "":
		return 0
	case StatusRunning:
		return 1
	case StatusCompleted:
		return 2
	case StatusFailed:
		return 3
	case StatusCanceled:
		return 4
	}
	return statusRare
}

// statusOf is the status statusCode numbered code.
func statusOf(code uint8) Status {
	switch code {
	case 1:
		return StatusRunning
	case 2:
		return StatusCompleted
	case 3:
		return StatusFailed
	case 4:
		return StatusCanceled
	}
	return ""
}

// statusRare marks a status kept in memRare.
const statusRare = 0xff

// set makes m hold snap. wf is the workflow kept by the store's last new
// instance, which m shares when it is snap's too.
func (m *memSnap) set(snap *Snapshot, last *memWorkflow) {
	m.id, m.state, m.outcome = snap.ID, snap.State, snap.Outcome
	switch {
	case m.wf.is(snap):
	case last.is(snap):
		m.wf = last
	default:
		m.wf = &memWorkflow{name: snap.Workflow, version: snap.Version, hash: snap.Hash}
	}
	m.step, m.attempt, m.commits = snap.Step, snap.Attempt, snap.Commits
	m.visits, m.input, m.context, m.packed = snap.Visits, snap.Input, snap.Context, false
	m.created, m.updated = snap.Created, snap.Updated
	m.status = statusCode(snap.Status)
	u := &snap.Usage
	if snap.Error == "" && snap.CancelReason == "" && m.status != statusRare &&
		u.Totals == (registry.Totals{}) && u.Agents == nil && u.Visit == (registry.Totals{}) {
		m.rare = nil
		return
	}
	if m.rare == nil {
		// Readers copy it under the instance's lock: it can be reused.
		m.rare = new(memRare)
	}
	*m.rare = memRare{err: snap.Error, cancelReason: snap.CancelReason, usage: snap.Usage}
	if m.status == statusRare {
		m.rare.status = snap.Status
	}
}

// is reports whether w is snap's workflow.
func (w *memWorkflow) is(snap *Snapshot) bool {
	return w != nil && w.name == snap.Workflow && w.version == snap.Version && w.hash == snap.Hash
}

// Status returns the status m holds.
func (m *memSnap) Status() Status {
	if m.status == statusRare {
		return m.rare.status
	}
	return statusOf(m.status)
}

// snapshot returns the Snapshot m holds; l is its instance's log.
func (m *memSnap) snapshot(l *memLog) Snapshot {
	s := Snapshot{ID: m.id, State: m.state, Outcome: m.outcome, Status: m.Status(),
		Step: m.step, Attempt: m.attempt, Commits: m.commits,
		Visits: m.visits, Input: m.input, Context: m.context, Created: m.created, Updated: m.updated}
	if m.packed {
		s.Visits, s.Input, s.Context = l.unpackMaps()
	}
	if m.wf != nil {
		s.Workflow, s.Version, s.Hash = m.wf.name, m.wf.version, m.wf.hash
	}
	if m.rare != nil {
		s.Error, s.CancelReason, s.Usage = m.rare.err, m.rare.cancelReason, m.rare.usage
	}
	return s
}
