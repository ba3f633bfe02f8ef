package natscluster_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The cluster test runs this binary again as its NATS servers, engines
	// and agents.
	switch os.Getenv(childEnv) {
	case "nats":
		os.Exit(runNATSChild())
	case "engine":
		os.Exit(runEngineChild())
	case "worker":
		os.Exit(runWorkerChild())
	}
	goleak.VerifyTestMain(m)
}
