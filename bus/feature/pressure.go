package feature

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/clock"
	"github.com/batonhq/baton/transport"
)

// PressureLevel is how full a mailbox is, with hysteresis: it rises as soon
// as a threshold is passed and falls back only well below it.
type PressureLevel int

// The pressure levels of a mailbox.
const (
	// PressureNormal: below the throttle mark, or recovered to the recover
	// mark after being throttled.
	PressureNormal PressureLevel = iota
	// PressureThrottled: at 80% of capacity or more (by default); senders
	// are asked to halve their rate.
	PressureThrottled
	// PressureOverloaded: at 95% or more (by default); senders are asked to
	// pause non-critical messages. It falls back to throttled below 80%.
	PressureOverloaded
)

// String returns "normal", "throttled" or "overloaded".
func (l PressureLevel) String() string {
	switch l {
	case PressureThrottled:
		return "throttled"
	case PressureOverloaded:
		return "overloaded"
	}
	return "normal"
}

// Statuses of a backpressure signal.
const (
	StatusThrottled  = "throttled"
	StatusOverloaded = "overloaded"
	StatusRecovering = "recovering"
)

// Backpressure sets the fill ratios of a mailbox at which its senders are
// signalled. Zero fields take the defaults.
type Backpressure struct {
	// Throttle is the fill ratio at which a mailbox becomes throttled (0.8).
	Throttle float64
	// Overload is the fill ratio at which it becomes overloaded (0.95).
	Overload float64
	// Recover is the fill ratio at or below which a throttled or overloaded
	// mailbox has recovered (0.5).
	Recover float64
	// Silent keeps the levels to Go callers (Pressure, OnPressure): no
	// NOTIFICATION is sent to senders.
	Silent bool
}

func (p Backpressure) withDefaults() Backpressure {
	if p.Throttle <= 0 || p.Throttle > 1 {
		p.Throttle = 0.8
	}
	if p.Overload <= 0 || p.Overload > 1 {
		p.Overload = 0.95
	}
	if p.Overload < p.Throttle {
		p.Overload = p.Throttle
	}
	if p.Recover <= 0 {
		p.Recover = 0.5
	}
	if p.Recover >= p.Throttle {
		p.Recover = p.Throttle / 2
	}
	return p
}

// marks turns the ratios into depths for a mailbox of capacity n.
func (p Backpressure) marks(n int) (throttle, overload, recover int) {
	throttle = max(1, int(math.Ceil(p.Throttle*float64(n))))
	overload = max(throttle, int(math.Ceil(p.Overload*float64(n))))
	recover = min(throttle-1, int(math.Floor(p.Recover*float64(n))))
	return throttle, overload, recover
}

// PressureState is a mailbox's pressure at one moment.
type PressureState struct {
	// Agent owns the mailbox.
	Agent string
	// Level is the mailbox's pressure level.
	Level PressureLevel
	// Depth and Capacity are the messages in the mailbox and its limit.
	Depth, Capacity int
	// EstimatedDelay guesses how long a message sent now would wait: the
	// longer of the recent average time in this mailbox and the age of its
	// oldest message.
	EstimatedDelay time.Duration
}

// PressureChange is a change of a mailbox's pressure level, as OnPressure
// reports it and as backpressure NOTIFICATIONs carry it.
type PressureChange struct {
	PressureState
	// From is the level before the change (Level is the one after).
	From PressureLevel
	// Status is the signal sent to senders: "throttled", "overloaded", or
	// "recovering" when the mailbox fell back to normal.
	Status string
	// At is when the change happened.
	At time.Time
}

// PressureStats are a PressureGauge's figures.
type PressureStats struct {
	// Changes counts changes of a mailbox's pressure level; Signals the
	// NOTIFICATIONs sent to senders about them.
	Changes, Signals uint64
	// Levels holds the level of every mailbox the gauge has seen, by agent.
	Levels map[string]PressureLevel
}

// maxPressureSenders bounds the senders a pressured mailbox remembers to
// tell when it recovers.
const maxPressureSenders = 256

// maxPressureTimes bounds the send times a mailbox's gauge keeps to tell
// the age of its oldest message.
const maxPressureTimes = 1 << 14

// PressureGauge follows the pressure of the mailboxes it sends to and
// takes from, and tells senders about it. After each send and take through
// it, it reads the mailbox's depth from the transport it wraps
// (transport.RoomTeller: the in-memory bus counts the messages waiting,
// natsbus the messages its stream holds, taken and not yet settled
// included) and moves the mailbox's level one message at a time, as a
// mailbox filling or draining would: throttled from 80% of its capacity,
// overloaded from 95%, normal again at 50%. Every agent that sends to a
// mailbox under pressure receives a NOTIFICATION (action "backpressure",
// status "throttled" or "overloaded", queue_depth, capacity,
// estimated_delay in seconds), and "recovering" once it drains: a sender
// hears of each change once. Pressure reports a mailbox's state and
// OnPressure calls back on every change.
//
// The gauge sees what goes through it: work another process takes (on
// NATS) lowers the level at the next send, take or Pressure call here.
type PressureGauge struct {
	transport.Transport
	cfg   Backpressure
	clock clock.Clock

	mu      sync.Mutex
	boxes   map[string]*gaugeBox
	subs    callbacks[PressureChange] // OnPressure's
	changes uint64
	signals uint64
}

// gaugeBox is what the gauge knows of one mailbox.
type gaugeBox struct {
	level    PressureLevel
	depth    int
	capacity int
	senders  map[string]struct{} // told of the current pressure
	sent     []time.Time         // recent send times, oldest first
	waitEWMA time.Duration       // smoothed time in mailbox of the messages taken
}

// pressureNote is a signal to send, or a change to report, once the
// gauge's lock is released.
type pressureNote struct {
	ch      PressureChange
	targets []string
	change  bool
}

// NewPressureGauge returns inner with its mailboxes' pressure followed, on
// clk (clock.Real() when nil). inner must tell a mailbox's room
// (transport.RoomTeller; the in-memory bus and natsbus do): without it,
// Pressure returns ErrNoRoom and no level ever changes.
func NewPressureGauge(inner transport.Transport, p Backpressure, clk clock.Clock) *PressureGauge {
	if clk == nil {
		clk = clock.Real()
	}
	silent := p.Silent
	p = p.withDefaults()
	p.Silent = silent
	return &PressureGauge{Transport: inner, cfg: p, clock: clk,
		boxes: make(map[string]*gaugeBox)}
}

// SendWork sends m on and follows the pressure of its receiver's mailbox.
func (g *PressureGauge) SendWork(ctx context.Context, m *transport.Message) error {
	err := g.Transport.SendWork(ctx, m)
	g.sent(ctx, m, err)
	return err
}

// OfferWork is SendWork offering m (transport.Offerer) to a transport that
// takes offers.
func (g *PressureGauge) OfferWork(ctx context.Context, m *transport.Message) error {
	var err error
	if o, ok := g.Transport.(transport.Offerer); ok {
		err = o.OfferWork(ctx, m)
	} else {
		err = g.Transport.SendWork(ctx, m)
	}
	g.sent(ctx, m, err)
	return err
}

// sent follows the receiver's pressure after a point-to-point send that
// queued m.
func (g *PressureGauge) sent(ctx context.Context, m *transport.Message, err error) {
	if err != nil || m == nil || ctx == nil || m.To == transport.BroadcastAll {
		return
	}
	if _, topic := m.Topic(); topic {
		return
	}
	free, capacity, rerr := roomOf(ctx, g.Transport, m.To)
	if rerr != nil {
		return
	}
	now := g.clock.Now()
	g.mu.Lock()
	b := g.boxLocked(m.To, capacity)
	b.sent = append(b.sent, now)
	if n := min(max(capacity, 1), maxPressureTimes); len(b.sent) > 2*n {
		b.sent = slices.Clone(b.sent[len(b.sent)-n:])
	}
	notes := g.moveLocked(m.To, b, capacity-free, m.From, now)
	g.mu.Unlock()
	g.emit(ctx, notes)
}

// TakeWork takes agent's messages and follows its mailbox's pressure: each
// message taken lowers its depth by one.
func (g *PressureGauge) TakeWork(ctx context.Context, agent string, max int) ([]*transport.Message, error) {
	msgs, err := g.Transport.TakeWork(ctx, agent, max)
	if len(msgs) == 0 {
		return msgs, err
	}
	now := g.clock.Now()
	g.mu.Lock()
	var notes []pressureNote
	if b := g.boxes[agent]; b != nil {
		for range msgs {
			if i := len(b.sent) - b.depth; i >= 0 && i < len(b.sent) && b.depth > 0 {
				b.waitEWMA += (now.Sub(b.sent[i]) - b.waitEWMA) / 8
			}
			notes = append(notes, g.moveLocked(agent, b, b.depth-1, "", now)...)
		}
	}
	g.mu.Unlock()
	g.emit(ctx, notes)
	return msgs, err
}

// Pressure returns agent's current pressure, reading its mailbox's depth
// from the transport (a change since the gauge last looked is reported as
// any other).
func (g *PressureGauge) Pressure(ctx context.Context, agent string) (PressureState, error) {
	free, capacity, err := roomOf(ctx, g.Transport, agent)
	if err != nil {
		return PressureState{}, err
	}
	now := g.clock.Now()
	g.mu.Lock()
	b := g.boxLocked(agent, capacity)
	notes := g.moveLocked(agent, b, capacity-free, "", now)
	st := g.stateLocked(agent, b, now)
	g.mu.Unlock()
	g.emit(ctx, notes)
	return st, nil
}

// Room is the wrapped transport's, when it tells it.
func (g *PressureGauge) Room(ctx context.Context, agent string) (free, capacity int, err error) {
	return roomOf(ctx, g.Transport, agent)
}

func (g *PressureGauge) boxLocked(agent string, capacity int) *gaugeBox {
	b := g.boxes[agent]
	if b == nil {
		b = &gaugeBox{}
		g.boxes[agent] = b
	}
	b.capacity = capacity
	return b
}

func (g *PressureGauge) stateLocked(agent string, b *gaugeBox, now time.Time) PressureState {
	delay := b.waitEWMA
	if len(b.sent) > 0 && b.depth > 0 {
		oldest := b.sent[max(len(b.sent)-b.depth, 0)]
		delay = max(delay, now.Sub(oldest))
	}
	return PressureState{Agent: agent, Level: b.level, Depth: b.depth, Capacity: b.capacity, EstimatedDelay: max(delay, 0)}
}

// moveLocked moves b's depth to depth one message at a time, as the
// mailbox filled or drained, and returns the signals each crossing of a
// mark makes. from is the sender whose message caused a rise.
func (g *PressureGauge) moveLocked(agent string, b *gaugeBox, depth int, from string, now time.Time) []pressureNote {
	depth = max(depth, 0)
	throttle, overload, recover := g.cfg.marks(b.capacity)
	var notes []pressureNote
	if depth == b.depth && depth >= throttle {
		// A send that left the depth as it was (another message left
		// meanwhile) still tells a new sender.
		b.depth--
	}
	for b.depth != depth {
		next := b.level
		if b.depth < depth {
			b.depth++
			switch {
			case b.depth >= overload:
				next = PressureOverloaded
			case b.depth >= throttle && next == PressureNormal:
				next = PressureThrottled
			}
			if b.depth >= throttle && next == b.level {
				if n, ok := g.tellLocked(agent, b, from, now); ok {
					notes = append(notes, n)
				}
				continue
			}
		} else {
			b.depth--
			switch {
			case b.level == PressureNormal:
			case b.depth <= recover:
				next = PressureNormal
			case b.level == PressureOverloaded && b.depth < throttle:
				next = PressureThrottled
			}
		}
		if next != b.level {
			notes = append(notes, g.changeLocked(agent, b, next, from, now))
		}
	}
	return notes
}

// tellLocked tells a new sender to a mailbox under pressure of its level.
func (g *PressureGauge) tellLocked(agent string, b *gaugeBox, from string, now time.Time) (pressureNote, bool) {
	if g.cfg.Silent || from == "" || from == agent || len(b.senders) >= maxPressureSenders {
		return pressureNote{}, false
	}
	if _, told := b.senders[from]; told {
		return pressureNote{}, false
	}
	if b.senders == nil {
		b.senders = make(map[string]struct{})
	}
	b.senders[from] = struct{}{}
	return pressureNote{ch: g.changeOf(agent, b, b.level, now), targets: []string{from}}, true
}

func (g *PressureGauge) changeOf(agent string, b *gaugeBox, from PressureLevel, now time.Time) PressureChange {
	ch := PressureChange{PressureState: g.stateLocked(agent, b, now), From: from, Status: b.level.String(), At: now.UTC()}
	if b.level == PressureNormal {
		ch.Status = StatusRecovering
	}
	return ch
}

// changeLocked moves b to level next and returns the signals: to every
// sender told of the pressure so far (plus from, the sender whose message
// caused the rise) and to the OnPressure subscribers.
func (g *PressureGauge) changeLocked(agent string, b *gaugeBox, next PressureLevel, from string, now time.Time) pressureNote {
	prev := b.level
	b.level = next
	g.changes++
	var targets []string
	if !g.cfg.Silent {
		if next != PressureNormal && from != "" && from != agent && len(b.senders) < maxPressureSenders {
			if b.senders == nil {
				b.senders = make(map[string]struct{})
			}
			b.senders[from] = struct{}{}
		}
		for s := range b.senders {
			targets = append(targets, s)
		}
		slices.Sort(targets)
		if next == PressureNormal {
			b.senders = nil
		}
	}
	return pressureNote{ch: g.changeOf(agent, b, prev, now), targets: targets, change: true}
}

// emit sends the backpressure NOTIFICATIONs to each target that has a
// mailbox and, for a change of level, calls the OnPressure subscribers.
func (g *PressureGauge) emit(ctx context.Context, notes []pressureNote) {
	for _, n := range notes {
		for _, to := range n.targets {
			if _, _, err := g.Room(ctx, to); errors.Is(err, transport.ErrUnknownAgent) {
				continue // a sender without a mailbox cannot be told
			}
			msg := &transport.Message{
				Type:     transport.MessageNotification,
				From:     n.ch.Agent,
				To:       to,
				Priority: transport.PriorityHigh,
				Content: map[string]any{
					"action":          "backpressure",
					"status":          n.ch.Status,
					"agent":           n.ch.Agent,
					"queue_depth":     n.ch.Depth,
					"capacity":        n.ch.Capacity,
					"estimated_delay": n.ch.EstimatedDelay.Seconds(),
				},
			}
			if g.Transport.SendWork(ctx, msg) == nil {
				g.mu.Lock()
				g.signals++
				g.mu.Unlock()
			}
		}
		if n.change {
			g.subs.call(n.ch)
		}
	}
}

// OnPressure calls f each time a mailbox's pressure level changes, until
// the returned function is called. f runs outside the gauge's lock, in the
// goroutine of the call that caused the change; it may call the gauge but
// must not block.
func (g *PressureGauge) OnPressure(f func(PressureChange)) (cancel func()) { return g.subs.add(f) }

// Stats returns the gauge's figures.
func (g *PressureGauge) Stats() PressureStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := PressureStats{Changes: g.changes, Signals: g.signals, Levels: make(map[string]PressureLevel, len(g.boxes))}
	for agent, b := range g.boxes {
		st.Levels[agent] = b.level
	}
	return st
}

// Close drops the OnPressure subscribers. The gauge starts no goroutine;
// Close is safe to call more than once, returns nil, and does not close
// the wrapped transport.
func (g *PressureGauge) Close() error {
	g.subs.clear()
	return nil
}

var (
	_ transport.Transport  = (*PressureGauge)(nil)
	_ transport.Offerer    = (*PressureGauge)(nil)
	_ transport.RoomTeller = (*PressureGauge)(nil)
)
