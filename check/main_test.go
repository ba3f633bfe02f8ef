package check_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Explore runs instances on workers of its own: none may outlive it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
