package weft_test

import (
	"bytes"
	"fmt"
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
	//     task 2 "sleeper" (weft_test.ExampleDump.func1.1) parent 1: waiting on timer (Sleep, due in 59s, at 12:01:00.000) for 1s at example_obs_test.go:21; started at example_obs_test.go:19
	//     task 3 "reader" (weft_test.ExampleDump.func1.2) parent 1: waiting on channel (Chan.Recv) for 1s at example_obs_test.go:25; started at example_obs_test.go:23
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
