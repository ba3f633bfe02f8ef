package bus

import (
	"slices"
	"time"

	"github.com/batonhq/baton/transport"
	"go.uber.org/zap"
)

// Statuses of a backpressure signal.
const (
	StatusThrottled  = "throttled"
	StatusOverloaded = "overloaded"
	StatusRecovering = "recovering"
)

// maxPressureSenders bounds the senders a pressured mailbox remembers to
// tell when it recovers.
const maxPressureSenders = 256

// PressureState is a mailbox's pressure at one moment.
type PressureState struct {
	// Agent owns the mailbox.
	Agent string
	// Level is the mailbox's pressure level.
	Level transport.PressureLevel
	// Depth and Capacity are the messages queued and the mailbox's limit.
	Depth, Capacity int
	// EstimatedDelay guesses how long a message sent now would wait: the
	// longer of the recent average time in this mailbox and the age of its
	// oldest queued message.
	EstimatedDelay time.Duration
}

// PressureChange is a change of a mailbox's pressure level, as OnPressure
// reports it and as backpressure NOTIFICATIONs carry it.
type PressureChange struct {
	PressureState
	// From is the level before the change (Level is the one after).
	From transport.PressureLevel
	// Status is the signal sent to senders: "throttled", "overloaded", or
	// "recovering" when the mailbox fell back to normal.
	Status string
	// At is when the change happened.
	At time.Time
}

// Pressure returns agentID's current pressure.
func (b *Bus) Pressure(agentID string) (PressureState, error) {
	mb, err := b.mailboxFor(agentID)
	if err != nil {
		return PressureState{}, err
	}
	now := b.clock.Now().UnixNano()
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return b.pressureLocked(mb, now), nil
}

func (b *Bus) pressureLocked(mb *mailbox, now int64) PressureState {
	return PressureState{Agent: mb.id, Level: mb.level, Depth: mb.c.depth, Capacity: mb.capacity, EstimatedDelay: delayLocked(mb, now)}
}

func delayLocked(mb *mailbox, now int64) time.Duration {
	d := mb.waitEWMA
	mb.queue.Heads(func(e entry) { d = max(d, now-e.enq) })
	return time.Duration(max(d, 0))
}

// pushLocked queues e and raises the mailbox's pressure if it passed a mark.
// With front set (a redelivery) e goes to the head of its priority and,
// having been accepted long ago, bypasses the capacity checks: it counts
// itself in the bus's total, which reserveLocked does for every other push.
func (b *Bus) pushLocked(mb *mailbox, e entry, front bool, now int64) {
	if front {
		mb.queue.PushFront(e.m.Priority, e)
		mb.c.depth++
		b.total.Add(1)
		if mb.c.depth == 1 {
			mb.signal()
		}
	} else {
		mb.pushLocked(e)
	}
	if mb.c.depth >= mb.throttleAt {
		b.pressuredLocked(mb, e.m.From, now)
	}
}

// pressuredLocked handles a push at or above the throttle mark: a rise of
// the level, or a new sender to tell about the current one.
func (b *Bus) pressuredLocked(mb *mailbox, from string, now int64) {
	next := mb.level
	switch {
	case mb.c.depth >= mb.overloadAt:
		next = transport.PressureOverloaded
	case next == transport.PressureNormal:
		next = transport.PressureThrottled
	}
	if next != mb.level {
		b.changeLocked(mb, next, from, now)
		return
	}
	if !b.cfg.signals || from == mb.id || len(mb.senders) >= maxPressureSenders {
		return
	}
	if _, told := mb.senders[from]; told {
		return
	}
	if mb.senders == nil {
		mb.senders = make(map[string]struct{})
	}
	mb.senders[from] = struct{}{}
	ch := b.changeOf(mb, mb.level, now)
	b.later(func() { b.emitPressure(ch, []string{from}, false) })
}

// relievedLocked lowers the pressure of a mailbox that drained past a mark.
// Callers check mb.level != PressureNormal first, so a mailbox under no
// pressure pays one comparison per receive.
func (b *Bus) relievedLocked(mb *mailbox, now int64) {
	switch {
	case mb.level == transport.PressureNormal:
	case mb.c.depth <= mb.recoverAt:
		b.changeLocked(mb, transport.PressureNormal, "", now)
	case mb.level == transport.PressureOverloaded && mb.c.depth < mb.throttleAt:
		b.changeLocked(mb, transport.PressureThrottled, "", now)
	}
}

func (b *Bus) changeOf(mb *mailbox, from transport.PressureLevel, now int64) PressureChange {
	ch := PressureChange{PressureState: b.pressureLocked(mb, now), From: from, Status: mb.level.String(), At: time.Unix(0, now).UTC()}
	if mb.level == transport.PressureNormal {
		ch.Status = StatusRecovering
	}
	return ch
}

// changeLocked moves mb to level next and queues the signals: to every
// sender told of the pressure so far (plus from, the sender whose message
// caused the rise) and to the OnPressure subscribers.
func (b *Bus) changeLocked(mb *mailbox, next transport.PressureLevel, from string, now int64) {
	prev := mb.level
	mb.level = next
	b.pressureChanges.Add(1)
	if !b.cfg.signals && b.ev.npress.Load() == 0 {
		return
	}
	ch := b.changeOf(mb, prev, now)
	var targets []string
	if b.cfg.signals {
		if next != transport.PressureNormal && from != "" && from != mb.id && len(mb.senders) < maxPressureSenders {
			if mb.senders == nil {
				mb.senders = make(map[string]struct{})
			}
			mb.senders[from] = struct{}{}
		}
		for s := range mb.senders {
			targets = append(targets, s)
		}
		slices.Sort(targets)
		if next == transport.PressureNormal {
			mb.senders = nil
		}
	}
	b.later(func() { b.emitPressure(ch, targets, true) })
}

// emitPressure sends the backpressure NOTIFICATION to each target that has
// a mailbox and, for a change of level, calls the OnPressure subscribers.
func (b *Bus) emitPressure(ch PressureChange, targets []string, change bool) {
	now := b.clock.Now()
	for _, to := range targets {
		mb := b.lookup(to)
		if mb == nil {
			continue
		}
		n := &transport.Message{
			Type:     transport.MessageNotification,
			From:     ch.Agent,
			To:       to,
			Priority: transport.PriorityHigh,
			Content: map[string]any{
				"action":          "backpressure",
				"status":          ch.Status,
				"agent":           ch.Agent,
				"queue_depth":     ch.Depth,
				"capacity":        ch.Capacity,
				"estimated_delay": ch.EstimatedDelay.Seconds(),
			},
		}
		b.fill(n, now)
		if b.enqueue(mb, n, now, overflowDeadLetter, nil) == nil {
			b.backpressureSignals.Add(1)
		}
	}
	if !change {
		return
	}
	if ce := b.log.Check(zap.InfoLevel, "mailbox pressure"); ce != nil {
		ce.Write(zap.String("category", "backpressure"), zap.String("agent", ch.Agent),
			zap.String("status", ch.Status), zap.Int("queue_depth", ch.Depth), zap.Int("capacity", ch.Capacity),
			zap.Duration("estimated_delay", ch.EstimatedDelay), zap.Int("senders", len(targets)))
	}
	for _, f := range b.pressureSubscribers() {
		f(ch)
	}
}
