package transport

import "time"

// LatencySummary describes a latency distribution. Percentiles are upper
// bounds of log-scale buckets: within 25% of the true value, never below it.
type LatencySummary struct {
	// Count is the number of recorded durations.
	Count uint64
	// Sum is the total of the recorded durations.
	Sum time.Duration
	// P50, P95 and P99 are the 50th, 95th and 99th percentiles.
	P50, P95, P99 time.Duration
	// Max is the upper bound of the highest non-empty bucket.
	Max time.Duration
}

// Mean returns Sum / Count, or zero when nothing was recorded.
func (s LatencySummary) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Sum / time.Duration(s.Count)
}
