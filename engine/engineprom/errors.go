package engineprom

import "errors"

// ErrNoRegistry is returned by Register when it is given no registry.
var ErrNoRegistry = errors.New("engineprom: registry is required")
