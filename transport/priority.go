package transport

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Priority orders the messages of a mailbox: higher priorities are delivered
// first. The zero value is PriorityNormal, so a message that does not set a
// priority travels at NORMAL, the default.
type Priority int

// The four priority levels, from lowest to highest.
const (
	// PriorityLow is for work that can wait (seed name LOW).
	PriorityLow Priority = -1
	// PriorityNormal is the default (seed alias MEDIUM).
	PriorityNormal Priority = 0
	// PriorityHigh is for work that should jump the queue.
	PriorityHigh Priority = 1
	// PriorityCritical is delivered before everything else (seed alias URGENT).
	PriorityCritical Priority = 2
)

// NumPriorities is the number of valid levels; Index = p - PriorityLow.
const NumPriorities = int(PriorityCritical-PriorityLow) + 1

// Valid reports whether p is one of the four levels.
func (p Priority) Valid() bool { return p >= PriorityLow && p <= PriorityCritical }

// Index maps a valid priority to 0 (LOW) .. 3 (CRITICAL), for a table
// with one slot per level.
func (p Priority) Index() int { return int(p - PriorityLow) }

// String returns the canonical name: "LOW", "NORMAL", "HIGH" or "CRITICAL".
// An invalid value prints as "Priority(n)".
func (p Priority) String() string {
	switch p {
	case PriorityLow:
		return "LOW"
	case PriorityNormal:
		return "NORMAL"
	case PriorityHigh:
		return "HIGH"
	case PriorityCritical:
		return "CRITICAL"
	}
	return "Priority(" + strconv.Itoa(int(p)) + ")"
}

// ParsePriority reads a priority name, case-insensitively: CRITICAL, HIGH,
// NORMAL, LOW and the seeds' aliases URGENT (CRITICAL) and MEDIUM (NORMAL).
// Any other text is a *ValidationError on field "priority".
func ParsePriority(s string) (Priority, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "CRITICAL", "URGENT":
		return PriorityCritical, nil
	case "HIGH":
		return PriorityHigh, nil
	case "NORMAL", "MEDIUM":
		return PriorityNormal, nil
	case "LOW":
		return PriorityLow, nil
	}
	return PriorityNormal, &ValidationError{Field: "priority", Reason: "is unknown: " + strconv.Quote(s)}
}

// The ranks of the workflow language's priority scale (1 is the most
// urgent) that the four levels are written as.
const (
	RankCritical = 1
	RankHigh     = 2
	RankNormal   = 5
	RankLow      = 10
)

// Rank returns the rank p is written as on the workflow language's scale:
// 1 (CRITICAL), 2 (HIGH), 5 (NORMAL) or 10 (LOW); PriorityFromRank(p.Rank())
// is p. An invalid value ranks as NORMAL.
func (p Priority) Rank() int {
	switch p {
	case PriorityCritical:
		return RankCritical
	case PriorityHigh:
		return RankHigh
	case PriorityLow:
		return RankLow
	}
	return RankNormal
}

// PriorityFromRank maps the workflow language's integer priorities, where 1
// is the most urgent, onto the four levels: 1 is CRITICAL, 2 to 4 HIGH, 5 to 9
// NORMAL and 10 or more LOW. Ranks below 1 count as 1.
func PriorityFromRank(rank int) Priority {
	switch {
	case rank <= RankCritical:
		return PriorityCritical
	case rank < RankNormal:
		return PriorityHigh
	case rank < RankLow:
		return PriorityNormal
	}
	return PriorityLow
}

// MarshalText encodes the priority as its name, which makes it a JSON string.
func (p Priority) MarshalText() ([]byte, error) {
	if !p.Valid() {
		return nil, &ValidationError{Field: "priority", Reason: "is unknown: " + strconv.Itoa(int(p))}
	}
	return []byte(p.String()), nil
}

// UnmarshalText decodes a priority name with ParsePriority.
func (p *Priority) UnmarshalText(b []byte) error {
	v, err := ParsePriority(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// UnmarshalJSON accepts only a JSON string holding a priority name, so that a
// bare number is never mistaken for a level.
func (p *Priority) UnmarshalJSON(b []byte) error {
	var s string
	if len(b) == 0 || b[0] != '"' || json.Unmarshal(b, &s) != nil {
		return &ValidationError{Field: "priority", Reason: "must be a priority name string"}
	}
	return p.UnmarshalText([]byte(s))
}
