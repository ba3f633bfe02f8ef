package natsbus_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerChildEnv) != "" {
		os.Exit(runWorkerChild())
	}
	goleak.VerifyTestMain(m)
}
