package weft_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// TestCPUProfileAttributesTimeToTasks profiles a task named "burner" that
// computes for 300 ms: the profile's samples carry weft.task=burner, and
// the label of the code that called Run.
func TestCPUProfileAttributesTimeToTasks(tt *testing.T) {
	var prof bytes.Buffer
	if err := pprof.StartCPUProfile(&prof); err != nil {
		tt.Skipf("CPU profiling is unavailable: %v", err)
	}
	pprof.Do(context.Background(), pprof.Labels("caller", "labelled-run"), func(context.Context) {
		_, err := weft.Run(func(t *weft.Task) (int, error) {
			p := weft.Go(t, func(t *weft.Task) (int, error) {
				t.SetName("burner")
				n := 0
				for start := time.Now(); time.Since(start) < 300*time.Millisecond; n++ {
					if err := t.Checkpoint(); err != nil {
						return 0, err
					}
				}
				return n, nil
			})
			return p.Await(t)
		})
		if err != nil {
			tt.Error(err)
		}
	})
	pprof.StopCPUProfile()
	zr, err := gzip.NewReader(&prof)
	if err != nil {
		tt.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		tt.Fatal(err)
	}
	// Label keys and values are in the profile's string table only if a
	// sample carries them.
	for _, want := range []string{"weft.task", "burner", "caller", "labelled-run"} {
		if !bytes.Contains(raw, []byte(want)) {
			tt.Errorf("the CPU profile has no %q", want)
		}
	}
}
