package webview

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestClipMiddle_KeepsTheCause(t *testing.T) {
	err := "failed in state REVIEWING: run of seller: " + strings.Repeat("x", 300) + ": connection refused"
	got := clipMiddle(err, 160)
	if n := utf8.RuneCountInString(got); n != 160 {
		t.Errorf("got %d runes, want 160", n)
	}
	if !strings.HasPrefix(got, "failed in state REVIEWING") || !strings.HasSuffix(got, ": connection refused") || !strings.Contains(got, "…") {
		t.Errorf("got %q, want the start and the cause with the middle cut", got)
	}
	if got := clipMiddle("short", 160); got != "short" {
		t.Errorf("got %q, want a short text whole", got)
	}
}

func TestFormatTime_NamesTheZone(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 2, 11, 0, time.FixedZone("CET", 3600))
	if got, want := formatTime(at, "2006-01-02 15:04:05 MST"), "2026-11-27 09:02:11 UTC"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
