package support_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the test leaves no goroutine behind (the readers of
// the programs' output end with them).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
