package loadgen

import (
	"math"
	"testing"
	"time"
)

func TestHistogramBucketsAreOrderedAndTight(t *testing.T) {
	for i := 1; i < histBuckets; i++ {
		if bucketValue(i) <= bucketValue(i-1) {
			t.Fatalf("bucket %d (%d) not above bucket %d (%d)", i, bucketValue(i), i-1, bucketValue(i-1))
		}
	}
	for _, v := range []uint64{0, 1, 127, 128, 255, 256, 1000, 12345, 1e6, 1e9, 1 << 40, math.MaxUint64 >> 1} {
		i := bucketOf(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("bucketOf(%d) = %d, out of range", v, i)
		}
		got := bucketValue(i)
		if diff := math.Abs(float64(got) - float64(v)); diff > float64(v)/100+1 {
			t.Errorf("value %d lands in bucket %d, which stands for %d (off by more than 1%%)", v, i, got)
		}
	}
}

func TestHistogramQuantilesAreWithinOnePercent(t *testing.T) {
	var h Histogram
	for v := 1; v <= 10000; v++ {
		h.Record(time.Duration(v) * time.Microsecond)
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		want := time.Duration(q*10000) * time.Microsecond
		got := h.Quantile(q)
		if math.Abs(float64(got-want)) > float64(want)/100 {
			t.Errorf("quantile %v = %v, want about %v", q, got, want)
		}
	}
	var a, b Histogram
	a.Record(time.Millisecond)
	b.Record(2 * time.Millisecond)
	a.Merge(&b)
	if a.TotalCount != 2 || a.Quantile(0.99) < time.Millisecond {
		t.Errorf("merge: %d values, p99 %v", a.TotalCount, a.Quantile(0.99))
	}
	if (&Histogram{}).Quantile(0.5) != 0 {
		t.Error("empty histogram has a quantile")
	}
}
