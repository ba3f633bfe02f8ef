package natsbus

import (
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/batonhq/baton/transport"
)

// The subjects and streams natsbus uses. An agent id becomes one subject
// token and part of a stream name through token, so that ids holding dots,
// spaces or wildcards stay one token.
const (
	// WorkPrefix starts the subjects of work: baton.work.<agent>.<level>.
	WorkPrefix = "baton.work."
	// DeadPrefix starts the subjects of dead letters: baton.dead.<agent>.<reason>.
	DeadPrefix = "baton.dead."
	// ReportsSubject is where agents send their reports (request-reply).
	ReportsSubject = "baton.reports"
	// WorkStreamPrefix starts the name of each agent's work stream.
	WorkStreamPrefix = "BATON_WORK_"
	// DeadStream is the name of the dead-letter stream.
	DeadStream = "BATON_DEAD"

	// HeaderMsgID is JetStream's deduplication header; natsbus sets it to
	// the message's idempotency key (its message id when it has none).
	HeaderMsgID = "Nats-Msg-Id"
	// HeaderOrigin names the natsbus that published a dead letter, so that
	// it does not hand its own dead letters to its callbacks twice.
	HeaderOrigin = "Baton-Origin"
	// HeaderReason carries a dead letter's reason.
	HeaderReason = "Baton-Reason"

	// reportsQueue is the queue group of the engines serving reports.
	reportsQueue = "baton-engines"
	// advisoryQueue is the queue group of the natsbus instances listening
	// for terminated messages, so that one of them handles each.
	advisoryQueue = "baton-natsbus"
)

// levels lists the priority levels highest first: the order TakeWork reads
// the consumers in. JetStream has no priorities, so each level is a subject
// of its own with a consumer of its own.
var levels = [...]transport.Priority{transport.PriorityCritical, transport.PriorityHigh, transport.PriorityNormal, transport.PriorityLow}

// levelIndex is p's place in levels.
func levelIndex(p transport.Priority) int {
	switch p {
	case transport.PriorityCritical:
		return 0
	case transport.PriorityHigh:
		return 1
	case transport.PriorityLow:
		return 3
	}
	return 2
}

// levelToken is the subject token (and consumer name) of a priority level.
func levelToken(p transport.Priority) string {
	switch p {
	case transport.PriorityCritical:
		return "critical"
	case transport.PriorityHigh:
		return "high"
	case transport.PriorityLow:
		return "low"
	}
	return "normal"
}

// Token returns the form an agent id takes in subjects and stream names:
// the id itself when it holds only ASCII letters, digits, '-' and '_';
// otherwise every other byte is written as '~' and two uppercase hex
// digits ("billing.eu" is "billing~2Eeu").
func Token(agent string) string {
	clean := true
	for i := 0; i < len(agent); i++ {
		if !plain(agent[i]) {
			clean = false
			break
		}
	}
	if clean {
		return agent
	}
	var b strings.Builder
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(agent); i++ {
		c := agent[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('~')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xF])
	}
	return b.String()
}

// agentOf is the inverse of Token.
func agentOf(token string) string {
	if !strings.Contains(token, "~") {
		return token
	}
	var b strings.Builder
	for i := 0; i < len(token); i++ {
		if token[i] == '~' && i+2 < len(token) {
			if v, err := strconv.ParseUint(token[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(token[i])
	}
	return b.String()
}

func plain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// maxMsgID is the longest idempotency key sent as it is as a work
// message's Nats-Msg-Id.
const maxMsgID = 256

// msgID is the Nats-Msg-Id of work under key: the key itself, or for a key
// longer than maxMsgID (an instance id of hundreds of bytes) "sha256:" and
// the base64 of its SHA-256, so that neither the header nor the stream's
// table of recent ids grows with ids. Either way one key is one id.
func msgID(key string) string {
	if len(key) <= maxMsgID {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// WorkSubject is the subject of agent's work at priority p.
func WorkSubject(agent string, p transport.Priority) string {
	return WorkPrefix + Token(agent) + "." + levelToken(p)
}

// WorkStream is the name of agent's work stream.
func WorkStream(agent string) string { return WorkStreamPrefix + Token(agent) }

// deadSubject is the subject of a dead letter of agent's with reason.
func deadSubject(agent string, r transport.DeadLetterReason) string {
	return DeadPrefix + Token(agent) + "." + string(r)
}
