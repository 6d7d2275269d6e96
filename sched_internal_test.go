package weft

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weft-go/weft/internal/clock"
)

// A virtual clock that the "CPU-bound" tasks advance themselves makes the
// scheduler's decisions exact: each unit of work takes 100 µs of clock time.

type trace []string

func (tr *trace) add(format string, args ...any) { *tr = append(*tr, fmt.Sprintf(format, args...)) }

// laneScenario runs two CPU tasks and a task that wakes every millisecond,
// and returns what ran when.
func laneScenario(t *testing.T) (trace, []time.Duration) {
	clk := clock.NewVirtual(time.Unix(0, 0))
	var tr trace
	var lags []time.Duration
	work := func(name string, units int) func(*Task) (int, error) {
		return func(wt *Task) (int, error) {
			for i := 0; i < units; i++ {
				clk.AdvanceTo(clk.Nanotime() + int64(100*time.Microsecond))
				if err := wt.Checkpoint(); err != nil {
					return i, err
				}
				tr.add("%s %d @%v", name, i, time.Duration(clk.Nanotime()))
			}
			return units, nil
		}
	}
	_, err := Run(func(wt *Task) (struct{}, error) {
		a := Go(wt, work("A", 150))
		b := Go(wt, work("B", 150))
		tick := Go(wt, func(wt *Task) (int, error) {
			for i := 0; i < 10; i++ {
				want := clk.Nanotime() + int64(time.Millisecond)
				wt.Sleep(time.Millisecond)
				lags = append(lags, time.Duration(clk.Nanotime()-want))
				tr.add("tick %d @%v", i, time.Duration(clk.Nanotime()))
			}
			return 0, nil
		})
		_, err := All(wt, a, b, tick)
		return struct{}{}, err
	}, WithLoops(1), func(o *options) { o.clock = clk })
	if err != nil {
		t.Fatal(err)
	}
	return tr, lags
}

func TestSameEventsGiveTheSameSchedule(t *testing.T) {
	first, _ := laneScenario(t)
	for i := 0; i < 3; i++ {
		again, _ := laneScenario(t)
		if !slices.Equal(first, again) {
			t.Fatalf("schedules differ:\n%v\n%v", first, again)
		}
	}
}

func TestTimerTaskPreemptsCPUTasksAtTheirNextCheckpoint(t *testing.T) {
	_, lags := laneScenario(t)
	if len(lags) != 10 {
		t.Fatalf("%d ticks", len(lags))
	}
	for i, lag := range lags {
		// One unit of work (100 µs) is the most a due timer can wait.
		if lag > 100*time.Microsecond {
			t.Fatalf("tick %d woke %v late: %v", i, lag, lags)
		}
	}
}

func TestCPUTasksTakeTurnsByTheInterval(t *testing.T) {
	tr, _ := laneScenario(t)
	// Count the runs: consecutive units of the same task.
	var runs []int
	last := ""
	for _, e := range tr {
		name := e[:1]
		if name == "t" {
			continue // ticks interleave but do not end a CPU task's run
		}
		if name != last {
			runs = append(runs, 0)
			last = name
		}
		runs[len(runs)-1]++
	}
	if len(runs) < 4 {
		t.Fatalf("the two CPU tasks did not alternate: runs %v", runs)
	}
	// A task keeps the loop for its interval (5 ms = 50 units) before
	// giving way; a run is cut early only by the end of the work.
	for _, r := range runs[:len(runs)-1] {
		if r < 45 || r > 55 {
			t.Fatalf("runs of %v units; want about 50 (one interval)", runs)
		}
	}
}

func TestForcedOffTaskGoesToTheBatchLaneAndBackWhenItWaits(t *testing.T) {
	clk := clock.NewVirtual(time.Unix(0, 0))
	var lanes []bool
	_, err := Run(func(wt *Task) (struct{}, error) {
		other := Go(wt, func(wt *Task) (int, error) {
			for i := 0; i < 100; i++ {
				clk.AdvanceTo(clk.Nanotime() + int64(time.Millisecond))
				wt.Checkpoint()
			}
			return 0, nil
		})
		for i := 0; i < 20; i++ {
			clk.AdvanceTo(clk.Nanotime() + int64(time.Millisecond))
			wt.Checkpoint()
			lanes = append(lanes, wt.extra != nil && wt.extra.batch)
		}
		wt.Sleep(time.Millisecond) // waits on its own
		lanes = append(lanes, wt.extra.batch)
		_, err := other.Await(wt)
		return struct{}{}, err
	}, WithLoops(1), func(o *options) { o.clock = clk })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(lanes[:20], true) {
		t.Fatalf("never in the batch lane: %v", lanes)
	}
	if lanes[20] {
		t.Fatal("still batch after waiting on its own")
	}
}

func TestCheckpointFastPathStrideAdapts(t *testing.T) {
	_, err := Run(func(wt *Task) (struct{}, error) {
		l := wt.loop
		deadline := time.Now().Add(50 * time.Millisecond)
		var most int32
		for time.Now().Before(deadline) {
			wt.Checkpoint()
			most = max(most, l.cpStride)
		}
		// Calls cost nanoseconds: thousands of fast calls per slow one. (The
		// largest stride seen: a preemption of the loop's thread just
		// before the last slow call lowers the last one, for one period.)
		if most < 100 {
			t.Errorf("stride at most %d in a tight loop of Checkpoints", most)
		}
		return struct{}{}, nil
	}, WithLoops(1))
	if err != nil {
		t.Fatal(err)
	}
}

// Every tick is served within one unit of work of the CPU-bound tasks beside
// it, however many there are. (A unit of 1.5 ms, longer than the tick
// period, makes the first Checkpoint after each tick find the next one due.)
func TestEveryTickIsServedWithinOneUnitBesideSeveralCPUTasks(t *testing.T) {
	const unit = 1500 * time.Microsecond
	for _, k := range []int{2, 4} {
		clk := clock.NewVirtual(time.Unix(0, 0))
		var worst time.Duration
		var stop bool
		_, err := Run(func(wt *Task) (struct{}, error) {
			var cpu []*Promise[int]
			for i := 0; i < k; i++ {
				cpu = append(cpu, Go(wt, func(wt *Task) (int, error) {
					for !stop {
						clk.AdvanceTo(clk.Nanotime() + int64(unit))
						if err := wt.Checkpoint(); err != nil {
							return 0, err
						}
					}
					return 0, nil
				}))
			}
			// The ticker is a task of its own, and main waits for everyone:
			// so the loop goroutine resumes the CPU tasks, and they drive.
			ticker := Go(wt, func(wt *Task) (int, error) {
				for i := 0; i < 200; i++ {
					want := clk.Nanotime() + int64(time.Millisecond)
					wt.Sleep(time.Millisecond)
					worst = max(worst, time.Duration(clk.Nanotime()-want))
				}
				stop = true
				return 0, nil
			})
			_, err := All(wt, append(cpu, ticker)...)
			return struct{}{}, err
		}, WithLoops(1), func(o *options) { o.clock = clk })
		if err != nil {
			t.Fatal(err)
		}
		if worst > unit {
			t.Errorf("k=%d: a tick waited %v for the CPU tasks", k, worst)
		}
	}
}
