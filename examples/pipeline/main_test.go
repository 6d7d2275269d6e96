package main

import (
	"os"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var vt = weft.WithVirtualTime(time.Unix(0, 0))

func TestPipelineSumsEverySquareAndReportsProgress(t *testing.T) {
	var reports []int
	var elapsed time.Duration
	r, err := weft.Run(func(t *weft.Task) (result, error) {
		start := t.Now()
		r, err := pipeline(t, 100, 4, 10*time.Millisecond, 100*time.Millisecond, weft.NewChan[os.Signal](1),
			func(done int) { reports = append(reports, done) })
		elapsed = t.Now().Sub(start)
		return r, err
	}, vt)
	if err != nil || r.interrupted || r.done != 100 || r.sum != 338350 {
		t.Fatalf("result %+v, %v", r, err)
	}
	// 100 numbers, 4 workers, 10 ms each: 250 ms, with a report at 100 and 200 ms.
	if elapsed != 250*time.Millisecond || len(reports) != 2 || reports[0] >= reports[1] {
		t.Fatalf("took %v, reports %v", elapsed, reports)
	}
}

func TestPipelineStopsCleanlyOnASignal(t *testing.T) {
	r, err := weft.Run(func(t *weft.Task) (result, error) {
		stop := weft.NewChan[os.Signal](1)
		weft.Go(t, func(t *weft.Task) (struct{}, error) {
			t.Sleep(55 * time.Millisecond)
			stop.TrySend(os.Interrupt)
			return struct{}{}, nil
		})
		return pipeline(t, 1000, 4, 10*time.Millisecond, time.Hour, stop, func(int) {})
	}, vt)
	if err != nil || !r.interrupted {
		t.Fatalf("result %+v, %v", r, err)
	}
	if r.done < 16 || r.done > 24 { // 4 workers, 5 rounds of 10 ms, give or take the one in flight
		t.Fatalf("%d numbers done before the stop at 55 ms", r.done)
	}
}
