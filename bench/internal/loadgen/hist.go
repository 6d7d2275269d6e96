package loadgen

import (
	"math/bits"
	"time"
)

// subBits sets the Histogram's resolution: each power of two is split into
// 1<<subBits equal buckets, so a recorded value is known to within 1/128
// (under 1%).
const subBits = 7

// histBuckets is the number of buckets needed for any uint64.
const histBuckets = (64 - subBits + 1) << subBits

// Histogram counts durations in log-linear buckets: exact below 128 ns,
// then 128 buckets per power of two. It is not safe for concurrent use;
// each load connection keeps its own and they are merged afterwards.
type Histogram struct {
	counts     [histBuckets]uint64
	TotalCount uint64 // values recorded
}

// bucketOf returns the bucket index for v nanoseconds.
func bucketOf(v uint64) int {
	if v < 1<<(subBits+1) {
		return int(v)
	}
	shift := bits.Len64(v) - (subBits + 1)
	sub := v >> shift // in [1<<subBits, 1<<(subBits+1))
	return (shift+1)<<subBits + int(sub) - 1<<subBits
}

// bucketValue returns the middle of bucket i's range, in nanoseconds.
func bucketValue(i int) uint64 {
	if i < 1<<(subBits+1) {
		return uint64(i)
	}
	shift := i>>subBits - 1
	sub := uint64(i&(1<<subBits-1) + 1<<subBits)
	low := sub << shift
	return low + (uint64(1)<<shift)/2
}

// Record adds one duration; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(0)
	if d > 0 {
		v = uint64(d)
	}
	h.counts[bucketOf(v)]++
	h.TotalCount++
}

// Merge adds all of o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.TotalCount += o.TotalCount
}

// Quantile returns the duration below which a fraction q (0..1) of the
// recorded values lie, or 0 if nothing was recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.TotalCount == 0 {
		return 0
	}
	rank := uint64(q * float64(h.TotalCount))
	if rank >= h.TotalCount {
		rank = h.TotalCount - 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > rank {
			return time.Duration(bucketValue(i))
		}
	}
	return time.Duration(bucketValue(histBuckets - 1))
}
