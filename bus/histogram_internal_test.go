package bus

import (
	"testing"
	"time"
)

func TestHistogram_BucketBounds(t *testing.T) {
	for _, v := range []uint64{0, 1, 2, 3, 4, 5, 7, 8, 9, 100, 999, 1000, 1 << 20, 123456789, 1 << 44, 1<<45 - 1} {
		i := bucketOf(v)
		up := bucketUpper(i)
		if up < v {
			t.Errorf("value %d: got bucket %d upper %d, want >= the value", v, i, up)
		}
		if v >= 8 && float64(up) > 1.25*float64(v) {
			t.Errorf("value %d: got upper %d, want within 25%%", v, up)
		}
		if i > 0 && bucketUpper(i-1) >= v {
			t.Errorf("value %d: got previous bucket upper %d, want below the value", v, bucketUpper(i-1))
		}
	}
	if got := bucketOf(1 << 62); got != numBuckets-1 {
		t.Errorf("got bucket %d for a huge value, want the last %d", got, numBuckets-1)
	}
}

func TestHistogram_Summary(t *testing.T) {
	var h histogram
	for i := 1; i <= 100; i++ {
		h.record(time.Duration(i) * time.Millisecond)
	}
	h.record(-time.Second) // clamped to zero
	var c histCounts
	c.add(&h)
	s := c.summary()
	if s.Count != 101 || s.Sum != 5050*time.Millisecond {
		t.Fatalf("got count %d sum %v, want 101 and 5.05s", s.Count, s.Sum)
	}
	for _, tc := range []struct {
		name      string
		got, want time.Duration
	}{{"p50", s.P50, 50 * time.Millisecond}, {"p95", s.P95, 95 * time.Millisecond}, {"p99", s.P99, 99 * time.Millisecond}, {"max", s.Max, 100 * time.Millisecond}} {
		if tc.got < tc.want || float64(tc.got) > 1.25*float64(tc.want) {
			t.Errorf("got %s %v, want within [%v, %v]", tc.name, tc.got, tc.want, time.Duration(1.25*float64(tc.want)))
		}
	}
	if s.Mean() != 5050*time.Millisecond/101 {
		t.Errorf("got mean %v, want %v", s.Mean(), 5050*time.Millisecond/101)
	}
	var empty histCounts
	if s := empty.summary(); s.Count != 0 || s.P99 != 0 || s.Mean() != 0 {
		t.Errorf("got %+v, want an empty summary", s)
	}
}
