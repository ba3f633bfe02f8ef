package check

import "errors"

// ErrProperty is wrapped by the error of a property expression (an
// ExploreOptions.Properties entry) that does not compile or is not bool.
var ErrProperty = errors.New("check: property")

// ErrNoWorkflow is returned by Explore when it is given no workflow.
var ErrNoWorkflow = errors.New("check: no workflow")
