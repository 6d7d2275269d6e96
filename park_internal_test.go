package weft

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/weft-go/weft/internal/coro"
)

var currentSink *Task

// BenchmarkCurrentTask measures currentTask (coro.Current and the job's
// task) called by a task, in Runs of 1 and 4 loops (the other loops
// idle).
func BenchmarkCurrentTask(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run("loops="+strconv.Itoa(n), func(b *testing.B) {
			Run(func(t *Task) (struct{}, error) {
				for b.Loop() {
					currentSink = currentTask()
				}
				if currentSink != t {
					b.Fatal("currentTask in the main task is not the main task")
				}
				return struct{}{}, nil
			}, WithLoops(n))
		})
	}
}

// BenchmarkCurrentTaskPlain measures currentTask called by a plain
// goroutine while a Run of 1 or 4 loops is alive.
func BenchmarkCurrentTaskPlain(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run("loops="+strconv.Itoa(n), func(b *testing.B) {
			Run(func(t *Task) (struct{}, error) {
				// Offload's goroutine is plain, and keeps the Run alive.
				return Offload(t, func() (struct{}, error) {
					b.ResetTimer()
					for range b.N {
						currentSink = currentTask()
					}
					if currentSink != nil {
						b.Error("currentTask in a plain goroutine is a task")
					}
					return struct{}{}, nil
				})
			}, WithLoops(n))
		})
	}
}

// BenchmarkChanPlainCache measures the check of SendWait and RecvWait that
// the caller is no task, repeated by one plain goroutine.
func BenchmarkChanPlainCache(b *testing.B) {
	c := NewChan[int](1)
	for b.Loop() {
		if !c.plain.Plain() {
			b.Fatal("a plain goroutine taken for a task")
		}
	}
}

// currentTask names the calling task: the main task, a task its driver
// resumes nested (see "Handing over"), the driver again once the nested
// one switched back; and no task in a plain goroutine.
func TestCurrentTaskIsTheCaller(t *testing.T) {
	if !coro.HaveGetg {
		t.Skip("currentTask answers nil without a goroutine identifier")
	}
	var errs []string
	check := func(where string, got, want *Task) {
		if got != want {
			errs = append(errs, fmt.Sprintf("%s: currentTask = %p, want %p", where, got, want))
		}
	}
	_, err := Run(func(mt *Task) (struct{}, error) {
		check("main", currentTask(), mt)
		nested := false
		p := Go(mt, func(ct *Task) (struct{}, error) {
			nested = ct.nested
			check("child", currentTask(), ct)
			ct.Yield()
			check("child after Yield", currentTask(), ct)
			return struct{}{}, nil
		})
		check("main after Go", currentTask(), mt)
		if _, err := p.Await(mt); err != nil {
			return struct{}{}, err
		}
		if !nested {
			errs = append(errs, "the child never ran nested under main")
		}
		check("main after Await", currentTask(), mt)
		got, _ := Offload(mt, func() (*Task, error) { return currentTask(), nil })
		check("Offload's goroutine", got, nil)
		ch := make(chan *Task)
		go func() { ch <- currentTask() }()
		got, _ = Offload(mt, func() (*Task, error) { return <-ch, nil })
		check("a goroutine of the task's", got, nil)
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
}

// Coroutines go from loop to loop (with their tasks, and through the
// Run's pool once their tasks end): currentTask and callerLoop follow,
// and tasks of another Run running at the same time are never taken for
// one's own.
func TestCurrentTaskAcrossLoopsAndRuns(t *testing.T) {
	if !coro.HaveGetg {
		t.Skip("currentTask answers nil without a goroutine identifier")
	}
	type use struct {
		t *Task
		l *loop
	}
	var mu sync.Mutex
	var errs []string
	uses := map[*coro.Coro][]use{}
	check := func(ct *Task) {
		got, gotLoop := currentTask(), callerLoop()
		mu.Lock()
		defer mu.Unlock()
		if got != ct || gotLoop != ct.loop {
			errs = append(errs, fmt.Sprintf("currentTask, callerLoop = %p, %p; want %p, %p", got, gotLoop, ct, ct.loop))
		}
		uses[ct.co] = append(uses[ct.co], use{ct, ct.loop})
	}
	// Enough tasks at once that a loop's idle coroutines overflow into
	// the pool (maxIdleCorosMulti), then a loop with none takes them.
	const tasks = maxIdleCorosMulti + 2*coroBatch
	body := func(mt *Task) (struct{}, error) {
		wave := func(pt *Task) error {
			ps := make([]*Promise[struct{}], tasks)
			for i := range ps {
				ps[i] = Go(pt, func(ct *Task) (struct{}, error) {
					check(ct)
					ct.Yield()
					check(ct)
					return struct{}{}, nil
				})
			}
			_, err := All(pt, ps...)
			return err
		}
		if err := wave(mt); err != nil {
			return struct{}{}, err
		}
		p := Go(mt, func(ct *Task) (struct{}, error) {
			to := ct.rs.loops[1]
			if ct.loop == to {
				to = ct.rs.loops[0]
			}
			ct.migrate(to, "a test")
			check(ct)
			return struct{}{}, wave(ct)
		})
		_, err := p.Await(mt)
		return struct{}{}, err
	}
	var wg sync.WaitGroup
	runErrs := make([]error, 2)
	for i := range runErrs {
		wg.Go(func() { _, runErrs[i] = Run(body, WithLoops(2)) })
	}
	wg.Wait()
	for _, err := range runErrs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range errs[:min(len(errs), 5)] {
		t.Error(e)
	}
	moved := false
	for _, us := range uses {
		for _, u := range us[1:] {
			moved = moved || (u.t != us[0].t && u.l != us[0].l)
		}
	}
	if !moved {
		t.Error("no coroutine served tasks on two loops: the test did not test what it says")
	}
}
