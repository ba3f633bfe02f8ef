package engine

// Family lets engines built apart run one another's workflows as children,
// as a server does that hosts a directory of workflows, several versions
// of each: a workflow state starts its child on the engine Current names
// for the child's workflow (the version new instances take), and a child
// found in the store after a restart is run by the engine of the version
// it started on. Unlike the engines a calling workflow's engine builds for
// the workflows of a rules.LoadSet (and resumes and closes with itself),
// each engine of a Family is built, resumed and closed by whoever built
// it; resume the engines of called workflows before their callers.
type Family struct{ f *family }

// NewFamily returns an empty family whose workflow states start their
// children on current(name): nil there fails the state with the outcome
// error (kind child_failed).
func NewFamily(current func(name string) *Engine) *Family {
	return &Family{f: &family{shared: true, current: current}}
}

// WithFamily makes the engine one of f: its workflow states' children run
// on f's engines, and it runs theirs. Its workflow's children need not be
// linked (rules.LoadSet) then.
func WithFamily(f *Family) Option { return func(c *config) { c.family = f.f } }
