package transport

// PressureLevel is how full a mailbox is, with hysteresis: it rises as soon
// as a threshold is passed and falls back only well below it.
type PressureLevel int

// The pressure levels of a mailbox (communication-flow schema §6.2).
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
