package natsbus

import (
	"testing"
	"time"
)

func TestLaterPause_DoublesUpToTheAckWait(t *testing.T) {
	for _, tc := range []struct {
		delivered int
		ackWait   time.Duration
		want      time.Duration
	}{
		{1, 30 * time.Second, 100 * time.Millisecond},
		{2, 30 * time.Second, 200 * time.Millisecond},
		{5, 30 * time.Second, 1600 * time.Millisecond},
		{9, 30 * time.Second, 25600 * time.Millisecond},
		{10, 30 * time.Second, 30 * time.Second},
		{1000, 30 * time.Second, 30 * time.Second},
		{3, 250 * time.Millisecond, 250 * time.Millisecond},
		{0, 30 * time.Second, 100 * time.Millisecond},
	} {
		if got := laterPause(tc.delivered, tc.ackWait); got != tc.want {
			t.Errorf("laterPause(%d, %v) = %v, want %v", tc.delivered, tc.ackWait, got, tc.want)
		}
	}
}
