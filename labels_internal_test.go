package weft

import (
	"context"
	"runtime/pprof"
	"testing"
)

func TestEveryTaskStartsWithTheLabelsOfRunsGoroutine(t *testing.T) {
	pprof.Do(context.Background(), pprof.Labels("request", "r1"), func(ctx context.Context) {
		runLabels := getProfLabel()
		_, err := Run(func(wt *Task) (int, error) {
			for i := range 10 {
				p := Go(wt, func(wt *Task) (bool, error) {
					ok := getProfLabel() == runLabels
					// A task that sets labels of its own must not pass them on
					// through its pooled coroutine.
					pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("leak", "task")))
					return ok, nil
				})
				if ok, _ := p.Await(wt); !ok {
					t.Errorf("task %d did not start with Run's labels", i)
				}
			}
			return 0, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
