package bus

import (
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/transport"
)

// The latency histograms use fixed log-scale buckets: four per power of two
// of nanoseconds, from 1ns to about 9.8 hours, so a percentile read from
// them is at most 25% above the true value. Recording is one atomic add per
// bucket plus one for the sum: no lock, no allocation.
const (
	subBucketBits = 2
	subBuckets    = 1 << subBucketBits
	maxOctave     = 45
	numBuckets    = (maxOctave + 1) * subBuckets
)

// histogram counts durations in log-scale buckets.
type histogram struct {
	buckets [numBuckets]atomic.Uint64
	sum     atomic.Uint64 // nanoseconds
}

// bucketOf maps a duration in ns to its bucket index.
func bucketOf(ns uint64) int {
	octave := bits.Len64(ns) // 0 for 0, k for [2^(k-1), 2^k)
	if octave > maxOctave {
		return numBuckets - 1
	}
	if octave <= subBucketBits {
		return octave * subBuckets
	}
	sub := int(ns>>(octave-1-subBucketBits)) & (subBuckets - 1)
	return octave*subBuckets + sub
}

// bucketUpper returns the largest duration, in ns, that falls into bucket i.
func bucketUpper(i int) uint64 {
	octave, sub := i/subBuckets, uint64(i%subBuckets)
	if octave <= subBucketBits {
		if octave == 0 {
			return 0
		}
		return 1<<octave - 1
	}
	width := uint64(1) << (octave - 1 - subBucketBits)
	return 1<<(octave-1) + (sub+1)*width - 1
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.buckets[bucketOf(uint64(d))].Add(1)
	h.sum.Add(uint64(d))
}

// histCounts is a point-in-time copy of a histogram, mergeable across shards.
type histCounts struct {
	buckets [numBuckets]uint64
	sum     uint64
}

func (c *histCounts) add(h *histogram) {
	for i := range h.buckets {
		c.buckets[i] += h.buckets[i].Load()
	}
	c.sum += h.sum.Load()
}

func (c *histCounts) summary() transport.LatencySummary {
	var s transport.LatencySummary
	for _, n := range c.buckets {
		s.Count += n
	}
	s.Sum = time.Duration(c.sum)
	if s.Count == 0 {
		return s
	}
	s.P50 = c.quantile(s.Count, 0.50)
	s.P95 = c.quantile(s.Count, 0.95)
	s.P99 = c.quantile(s.Count, 0.99)
	for i := numBuckets - 1; i >= 0; i-- {
		if c.buckets[i] > 0 {
			s.Max = time.Duration(bucketUpper(i))
			break
		}
	}
	return s
}

func (c *histCounts) quantile(total uint64, q float64) time.Duration {
	rank := uint64(q*float64(total) + 0.999999)
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, n := range c.buckets {
		seen += n
		if seen >= rank {
			return time.Duration(bucketUpper(i))
		}
	}
	return time.Duration(bucketUpper(numBuckets - 1))
}
