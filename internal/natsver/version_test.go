package natsver_test

import (
	"errors"
	"testing"

	"github.com/batonhq/baton/internal/natsver"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		got, need string
		tooOld    bool
		bad       bool
	}{
		{got: "2.10.0", need: "2.10.0"},
		{got: "2.10.1", need: "2.10.0"},
		{got: "2.11.0", need: "2.10.5"},
		{got: "3.0.0", need: "2.10.0"},
		{got: "v2.15.2", need: "2.10.0"},
		{got: "2.10.0-RC.3", need: "2.10.0"},
		{got: "2.12.0+build.7", need: "2.10.0"},
		{got: "2.10", need: "2.10.0"},
		{got: "2.9.25", need: "2.10.0", tooOld: true},
		{got: "2.2.0", need: "2.10.0", tooOld: true}, // compared as numbers, not strings
		{got: "1.99.99", need: "2.10.0", tooOld: true},
		{got: "2.10.0", need: "2.10.1", tooOld: true},
		{got: "", need: "2.10.0", bad: true},
		{got: "two.ten", need: "2.10.0", bad: true},
		{got: "2", need: "2.10.0", bad: true},
		{got: "2.10.0.1", need: "2.10.0", bad: true},
		{got: "2.-1.0", need: "2.10.0", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.got+"_vs_"+tt.need, func(t *testing.T) {
			err := natsver.Check(tt.got, tt.need)
			var old *natsver.TooOldError
			switch {
			case tt.tooOld:
				if !errors.As(err, &old) {
					t.Fatalf("got %v, want a *TooOldError", err)
				}
				if old.Got != tt.got || old.Need != tt.need {
					t.Fatalf("got Got=%q Need=%q, want %q %q", old.Got, old.Need, tt.got, tt.need)
				}
			case tt.bad:
				if err == nil || errors.As(err, &old) {
					t.Fatalf("got %v, want an error saying the version cannot be read", err)
				}
			default:
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
			}
		})
	}
}

func TestTooOldError_NamesVersions(t *testing.T) {
	err := natsver.Check("2.9.25", natsver.Min)
	want := "nats server 2.10.0 or newer is needed (connected to 2.9.25)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}

func TestCheckConn_Nil(t *testing.T) {
	if err := natsver.CheckConn(nil); !errors.Is(err, natsver.ErrNotConnected) {
		t.Fatalf("got %v, want ErrNotConnected", err)
	}
}
