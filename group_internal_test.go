package weft

import (
	"errors"
	"testing"
	"time"
)

// The window between a group task's count-out and the rest of its end,
// widened: the group's owner, on the other loop, joins in it and must
// still find the failure (it is recorded with the count-out).
func TestGroupFailureIsRecordedWithTheCountOut(t *testing.T) {
	testHookCountedOut = func() { time.Sleep(2 * time.Millisecond) }
	defer func() { testHookCountedOut = nil }()
	errBoom := errors.New("boom")
	lost, apart := 0, 0
	_, err := Run(func(wt *Task) (struct{}, error) {
		for range 50 {
			taskLoop := -1
			err := Group(wt, func(g *TaskGroup) error {
				g.Go(func(t *Task) error {
					for end := time.Now().Add(200 * time.Microsecond); time.Now().Before(end); {
						t.Checkpoint() // the hungry loop takes it
					}
					taskLoop = t.Loop()
					return errBoom
				})
				for end := time.Now().Add(500 * time.Microsecond); time.Now().Before(end); {
				}
				return nil
			})
			if taskLoop != wt.Loop() {
				apart++
				if !errors.Is(err, errBoom) {
					lost++
				}
			}
		}
		return struct{}{}, nil
	}, WithLoops(2))
	if err != nil {
		t.Fatal(err)
	}
	if apart == 0 {
		t.Fatal("no group task ended on another loop than its group's body: the test proves nothing")
	}
	if lost > 0 {
		t.Fatalf("%d of %d groups whose task ended on another loop lost its failure", lost, apart)
	}
}
