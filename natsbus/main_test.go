package natsbus_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/internal/clustertest"
)

func TestMain(m *testing.M) {
	// BenchmarkNATSRefundCluster runs this binary again as its servers.
	if code, ok := clustertest.RunChild(); ok {
		os.Exit(code)
	}
	if os.Getenv(workerChildEnv) != "" {
		os.Exit(runWorkerChild())
	}
	goleak.VerifyTestMain(m)
}
