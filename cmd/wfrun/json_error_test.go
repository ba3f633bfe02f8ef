package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/replay"
)

// TestRun_UnencodableResultIsAFailedRunNotUsage runs a scenario whose reply
// holds a NaN with --json: the engine refuses the data at its door, naming
// the field, and the scenario fails (exit 1), never a usage error (exit 2).
func TestRun_UnencodableResultIsAFailedRunNotUsage(t *testing.T) {
	out, errOut, code := wfrun(t, "run", "--json", "testdata/unencodable/nan_result.yaml")
	if code != 1 {
		t.Errorf("got exit %d (%s), want 1", code, errOut)
	}
	if strings.Contains(errOut, "Usage:") || !strings.Contains(out, "result.score") || !strings.Contains(out, "was refused") {
		t.Errorf("got stdout %q stderr %q, want the refusal naming result.score and no usage text", out, errOut)
	}
}

// TestReplay_LongLineNamesItsNumber replays a history whose second line is
// over the line limit: exit 1 and the line's number, not the scanner's
// "token too long".
func TestReplay_LongLineNamesItsNumber(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	long := `{"kind":"started","detail":"` + strings.Repeat("x", replay.MaxLineBytes) + `"}`
	if err := os.WriteFile(path, []byte(`{"seq":1,"kind":"started"}`+"\n"+long+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := wfrun(t, "replay", path, "../../examples/refund/workflow.yaml")
	if code != 1 || !strings.Contains(errOut, "line 2") || strings.Contains(errOut, "token too long") {
		t.Errorf("got exit %d, %q, want 1 and the error naming line 2", code, errOut)
	}
}
