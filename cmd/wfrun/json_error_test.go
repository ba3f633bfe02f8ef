package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/replay"
)

// TestRun_JSONEncodingErrorIsNotUsage runs a scenario whose history holds a
// NaN with --json: the encoding error is a failed run (exit 1) with its
// message, not a usage error (exit 2).
func TestRun_JSONEncodingErrorIsNotUsage(t *testing.T) {
	_, errOut, code := wfrun(t, "run", "--json", "testdata/unencodable/nan_result.yaml")
	if code != 1 {
		t.Errorf("got exit %d (%s), want 1", code, errOut)
	}
	if errOut == "" || strings.Contains(errOut, "Usage:") {
		t.Errorf("got stderr %q, want the error without the usage text", errOut)
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
