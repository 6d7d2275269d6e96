package weft_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// Runs side by side (as t.Parallel tests run) each reserve processors for
// their Offload pool: together they raise GOMAXPROCS by at most
// max(32, 8×base) above the program's own value, whatever their number,
// and give it all back when they end. Each Run used to size its pool by
// the GOMAXPROCS that the Runs before it had raised, and reserve that
// much more: 64 Runs drove GOMAXPROCS into the thousands and the process
// died of thread exhaustion.
func TestParallelRunsKeepGOMAXPROCSBounded(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	bound := base + max(32, 8*base) // procs.go's reserveCap
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := int64(runtime.GOMAXPROCS(0)); n > peak.Load() {
				peak.Store(n)
			}
			if n := runtime.GOMAXPROCS(0); n > 4*bound {
				// Far past the bound: stop sampling before the process
				// runs out of threads (the test fails below).
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	const runs = 64
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	start := make(chan struct{})
	for range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
				// Two rounds of pool work, so that the Runs overlap.
				for range 2 {
					if _, err := weft.Offload(wt, func() (int, error) {
						time.Sleep(5 * time.Millisecond)
						return 0, nil
					}); err != nil {
						return struct{}{}, err
					}
				}
				return struct{}{}, nil
			})
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(stop)
	<-sampled
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if p := int(peak.Load()); p > bound {
		t.Errorf("GOMAXPROCS reached %d with %d Runs side by side on a base of %d; want at most %d", p, runs, base, bound)
	}
	if p := peak.Load(); p <= int64(base) {
		t.Logf("GOMAXPROCS never rose above %d (no pool reserved anything?)", p)
	}
	if n := runtime.GOMAXPROCS(0); n != base {
		t.Errorf("GOMAXPROCS is %d after every Run ended, want the base %d back", n, base)
	}
}
