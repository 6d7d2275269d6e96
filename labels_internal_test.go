package weft

import (
	"context"
	"runtime/pprof"
	"slices"
	"testing"
)

// labelsNow returns the calling goroutine's profiler labels.
func labelsNow() []profLabel {
	if p := (*profLabelMap)(getProfLabel()); p != nil {
		return p.list
	}
	return nil
}

// The labels of Run's goroutine, plus weft.task, the task's function.
func TestEveryTaskStartsWithTheLabelsOfRunsGoroutine(t *testing.T) {
	pprof.Do(context.Background(), pprof.Labels("request", "r1"), func(ctx context.Context) {
		_, err := Run(func(wt *Task) (int, error) {
			for i := range 10 {
				p := Go(wt, func(wt *Task) (bool, error) {
					want := []profLabel{{"request", "r1"}, {"weft.task", "weft.TestEveryTaskStartsWithTheLabelsOfRunsGoroutine.func1.1.1"}}
					ok := slices.Equal(labelsNow(), want)
					if !ok {
						t.Errorf("task labels %v, want %v", labelsNow(), want)
					}
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

// SetName changes the label to the name, keeping Run's labels.
func TestSetNameLabelsTheTaskWithItsName(t *testing.T) {
	pprof.Do(context.Background(), pprof.Labels("a", "1", "z", "2"), func(ctx context.Context) {
		_, err := Run(func(wt *Task) (int, error) {
			wt.SetName("boss")
			want := []profLabel{{"a", "1"}, {"weft.task", "boss"}, {"z", "2"}}
			if got := labelsNow(); !slices.Equal(got, want) {
				t.Errorf("labels after SetName %v, want %v", got, want)
			}
			return 0, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// WithTaskLabels(false): tasks carry Run's labels only.
func TestWithTaskLabelsOffKeepsRunsLabelsOnly(t *testing.T) {
	pprof.Do(context.Background(), pprof.Labels("a", "1"), func(ctx context.Context) {
		runLabels := getProfLabel()
		_, err := Run(func(wt *Task) (int, error) {
			if getProfLabel() != runLabels {
				t.Errorf("labels %v, want Run's", labelsNow())
			}
			return 0, nil
		}, WithTaskLabels(false))
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestTheLabelLayoutMatchesRuntimePprof(t *testing.T) {
	if !labelsMirrored {
		t.Fatal("profLabelMap does not mirror runtime/pprof's labelMap on this Go version")
	}
}
