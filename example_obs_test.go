package weft_test

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/weft-go/weft"
)

// Dump from inside a task, on a virtual clock so that the output is the
// same every time (here the file paths are cut to their base name, and
// the Run's number, which counts the process's Runs, is replaced by N).
func ExampleDump() {
	weft.Run(func(t *weft.Task) (int, error) {
		t.SetName("main")
		ch := weft.NewChan[string](0)
		sleeper := weft.Go(t, func(t *weft.Task) (int, error) {
			t.SetName("sleeper")
			return 0, t.Sleep(time.Minute)
		})
		reader := weft.Go(t, func(t *weft.Task) (string, error) {
			t.SetName("reader")
			return ch.Recv(t)
		})
		if err := t.Sleep(time.Second); err != nil {
			return 0, err
		}
		var b bytes.Buffer
		weft.Dump(&b)
		s := regexp.MustCompile(`/\S*/`).ReplaceAllString(b.String(), "")
		fmt.Print(regexp.MustCompile(`weft run \d+`).ReplaceAllString(s, "weft run N"))
		sleeper.Cancel()
		ch.Close()
		sleeper.Await(t)
		reader.Await(t)
		return 0, nil
	}, weft.WithLoops(1), weft.WithVirtualTime(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)))
	// Output:
	// weft run N: 1 loop, 3 tasks
	// loop 0: 3 tasks
	//   task 1 "main" (weft_test.ExampleDump.func1): running; started at Run
	//     task 2 "sleeper" (weft_test.ExampleDump.func1.1) parent 1: waiting on timer (Sleep, due in 59s, at 12:01:00.000) for 1s at example_obs_test.go:22; started at example_obs_test.go:20
	//     task 3 "reader" (weft_test.ExampleDump.func1.2) parent 1: waiting on channel (Chan.Recv) for 1s at example_obs_test.go:26; started at example_obs_test.go:24
}

// A task's name shows in Dump, the watchdog's reports, traces and the
// profiler label weft.task.
func ExampleTask_SetName() {
	weft.Run(func(t *weft.Task) (int, error) {
		p := weft.Go(t, func(t *weft.Task) (int, error) {
			fmt.Printf("before: %q\n", t.Name())
			t.SetName("fetch example.com")
			fmt.Printf("after: %q\n", t.Name())
			return 0, nil
		})
		return p.Await(t)
	})
	// Output:
	// before: ""
	// after: "fetch example.com"
}

// RunStats counts the tasks by state and what they wait on.
func ExampleRunStats() {
	weft.Run(func(t *weft.Task) (int, error) {
		var ps []*weft.Promise[int]
		for range 3 {
			ps = append(ps, weft.Go(t, func(t *weft.Task) (int, error) { return 0, t.Sleep(time.Second) }))
		}
		s := weft.RunStats(t)
		fmt.Printf("live %d, running %d, sleeping %d, spawned %d\n", s.Live, s.Running, s.Waiting.Timer, s.Spawned)
		_, err := weft.All(t, ps...)
		return 0, err
	}, weft.WithLoops(1), weft.WithVirtualTime(time.Unix(0, 0)))
	// Output:
	// live 4, running 1, sleeping 3, spawned 4
}

// Tracing a run on a virtual clock; `weft trace run.json -o run.svg`
// draws the file as a timeline.
func ExampleWithTrace() {
	f, err := os.CreateTemp("", "weft-trace-*.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	_, err = weft.Run(func(t *weft.Task) (int, error) {
		t.SetName("main")
		return 0, t.Sleep(time.Millisecond)
	}, weft.WithTrace(f), weft.WithVirtualTime(time.Unix(0, 0)))
	fmt.Println(err)
	// Output:
	// <nil>
}
