package handoff

// Defaults of the validator.
const (
	// DefaultLoopWindow is how many recent hand-offs loop detection reads.
	DefaultLoopWindow = 5
	// DefaultLoopRepeats is how many of those may already target the same
	// agent before another hand-off to it is refused.
	DefaultLoopRepeats = 2
	// DefaultSupervisor is the only agent allowed to hand off to system
	// agents.
	DefaultSupervisor = "supervisor"
)

// config holds the settings of a Validator.
type config struct {
	window, repeats int
	errs            []error
}

func newConfig(opts []Option) *config {
	c := &config{
		window:  DefaultLoopWindow,
		repeats: DefaultLoopRepeats,
	}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

func (c *config) invalid(option, reason string) {
	c.errs = append(c.errs, &OptionError{Option: option, Reason: reason})
}

// Option configures a Validator.
type Option func(*config)

// WithLoopWindow sets loop detection: of the last window hand-offs of an
// instance, at most repeats may target the same agent; a hand-off to an
// agent that already has repeats of them is refused. Defaults 5 and 2 (the
// workflow's limits.handoff_window and limits.handoff_repeats).
func WithLoopWindow(window, repeats int) Option {
	return func(c *config) {
		if window < 1 || repeats < 1 {
			c.invalid("WithLoopWindow", "window and repeats must be at least 1")
			return
		}
		c.window, c.repeats = window, repeats
	}
}
