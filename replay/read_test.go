package replay_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/batonhq/baton/replay"
)

// TestReadHistory_LineLimit accepts a line just within MaxLineBytes and
// reports a longer one with its line number.
func TestReadHistory_LineLimit(t *testing.T) {
	entry := func(detailLen int) string {
		return `{"seq":1,"kind":"started","detail":"` + strings.Repeat("x", detailLen) + `"}`
	}
	first := entry(10)
	within := entry(replay.MaxLineBytes - len(entry(0)))
	if len(within) != replay.MaxLineBytes {
		t.Fatalf("got a line of %d bytes, want %d", len(within), replay.MaxLineBytes)
	}
	got, err := replay.ReadHistory(strings.NewReader(first + "\n" + within + "\n"))
	if err != nil || len(got) != 2 {
		t.Fatalf("got %d entries, %v, want 2 (a line of MaxLineBytes is accepted)", len(got), err)
	}

	_, err = replay.ReadHistory(strings.NewReader(first + "\n\n" + within + "x\n"))
	var le *replay.LineError
	if !errors.As(err, &le) || !errors.Is(err, replay.ErrLineTooLong) || le.Line != 3 {
		t.Fatalf("got %v, want a *LineError at line 3 matching ErrLineTooLong", err)
	}
	if !strings.Contains(err.Error(), "line 3") || strings.Contains(err.Error(), "bufio") {
		t.Errorf("got %q, want the line number and no scanner jargon", err)
	}
}

// TestNilArguments gives ReadHistory and Check nil: errors, not panics.
func TestNilArguments(t *testing.T) {
	if _, err := replay.ReadHistory(nil); !errors.Is(err, replay.ErrNilArgument) {
		t.Errorf("ReadHistory(nil): got %v, want ErrNilArgument", err)
	}
	if _, err := replay.Check(nil, nil); !errors.Is(err, replay.ErrNilArgument) {
		t.Errorf("Check(nil, nil): got %v, want ErrNilArgument", err)
	}
	if _, err := replay.ReadHistory(bytes.NewReader([]byte("{not json\n"))); err == nil {
		t.Error("got nil for a malformed line, want an error")
	}
}
