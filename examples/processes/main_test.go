package processes_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/internal/clustertest"
)

func TestMain(m *testing.M) {
	// The cluster test runs this binary again as its NATS servers.
	if code, ok := clustertest.RunChild(); ok {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}
