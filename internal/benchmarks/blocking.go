package benchmarks

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// BlockingCall makes b.N Blocking calls, each of a function that returns
// at once, from one task.
func BlockingCall(b *testing.B) {
	weft.Run(func(t *weft.Task) (int, error) {
		f := func(context.Context) (int, error) { return 1, nil }
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			weft.Blocking(t, f)
		}
		return 0, nil
	})
}

// GoroutineCall runs the same function b.N times as a goroutine would be
// used to call blocking code: go f(); <-done.
func GoroutineCall(b *testing.B) {
	f := func(context.Context) (int, error) { return 1, nil }
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		goCall(ctx, f)
	}
}

func goCall(ctx context.Context, f func(context.Context) (int, error)) (int, error) {
	done := make(chan struct{})
	var v int
	var err error
	go func() {
		defer close(done)
		v, err = f(ctx)
	}()
	<-done
	return v, err
}

// BlockingVsGoroutine measures both in one run: batches of calls that
// return at once through Blocking (from a task) and through go f(); <-done
// (from a goroutine), interleaved, b.N calls of each. It reports the ns per
// call of each (the median batch) and the ratio of the two per pair of
// batches: its median and its spread.
func BlockingVsGoroutine(b *testing.B) {
	const batch = 10000
	f := func(context.Context) (int, error) { return 1, nil }
	ctx := context.Background()
	var weftNs, goNs, ratios []float64
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		n := min(batch, b.N-done)
		var w time.Duration
		weft.Run(func(t *weft.Task) (int, error) {
			weft.Blocking(t, f) // the goroutine is started: measure calls
			start := time.Now()
			for range n {
				weft.Blocking(t, f)
			}
			w = time.Since(start)
			return 0, nil
		})
		start := time.Now()
		for range n {
			goCall(ctx, f)
		}
		g := time.Since(start)
		weftNs = append(weftNs, float64(w.Nanoseconds())/float64(n))
		goNs = append(goNs, float64(g.Nanoseconds())/float64(n))
		ratios = append(ratios, float64(w)/float64(g))
	}
	b.StopTimer()
	slices.Sort(weftNs)
	slices.Sort(goNs)
	slices.Sort(ratios)
	b.ReportMetric(weftNs[len(weftNs)/2], "weft-ns/call")
	b.ReportMetric(goNs[len(goNs)/2], "go-ns/call")
	b.ReportMetric(ratios[len(ratios)/2], "ratio")
	b.ReportMetric(ratios[len(ratios)/10], "ratio-p10")
	b.ReportMetric(ratios[len(ratios)*9/10], "ratio-p90")
	b.ReportMetric(0, "ns/op")
}
