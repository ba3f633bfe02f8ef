package typescript_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the tests leave no goroutine running: the engines,
// transports, report services and child-process waiters they start are all
// stopped and waited for.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
