package natscluster_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/batonhq/baton/internal/clustertest"
)

func TestMain(m *testing.M) {
	// The cluster test runs this binary again as its NATS servers, engines
	// and agents.
	if code, ok := clustertest.RunChild(); ok {
		os.Exit(code)
	}
	switch os.Getenv(childEnv) {
	case "engine":
		os.Exit(runEngineChild())
	case "worker":
		os.Exit(runWorkerChild())
	}
	goleak.VerifyTestMain(m)
}
