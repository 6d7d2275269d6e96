package weft_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/weft-go/weft"
)

func TestGenerateDeliversEveryValueThenEnds(t *testing.T) {
	var got []int
	run(t, func(wt *weft.Task) {
		c := weft.Generate(wt, 2, func(wt *weft.Task, yield func(int) error) error {
			for i := range 10 {
				if err := yield(i); err != nil {
					return err
				}
			}
			return nil
		})
		for v, err := range c.All(wt) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
	})
	if !slices.Equal(got, seq(0, 10)) {
		t.Fatalf("got %v", got)
	}
}

func TestGeneratorErrorComesAfterTheValuesBeforeIt(t *testing.T) {
	errDisk := errors.New("disk on fire")
	var got []string
	run(t, func(wt *weft.Task) {
		c := weft.Generate(wt, 4, func(wt *weft.Task, yield func(int) error) error {
			yield(1)
			yield(2)
			return errDisk
		})
		for v, err := range c.All(wt) {
			got = append(got, fmt.Sprint(v, " ", err))
		}
	})
	if want := []string{"1 <nil>", "2 <nil>", "0 disk on fire"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// The producer runs at most buffer values ahead of its consumer.
func TestGenerateAppliesBackPressure(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1") // its tasks share state without locks, as tasks of one loop may
	for _, buffer := range []int{0, 1, 5} {
		produced, ahead := 0, 0
		run(t, func(wt *weft.Task) {
			c := weft.Generate(wt, buffer, func(wt *weft.Task, yield func(int) error) error {
				for i := range 50 {
					if err := yield(i); err != nil {
						return err
					}
					produced++
				}
				return nil
			})
			consumed := 0
			for _, err := range c.All(wt) {
				if err != nil {
					t.Fatal(err)
				}
				consumed++
				ahead = max(ahead, produced-consumed)
				wt.Yield() // a slow consumer: the producer may run meanwhile
			}
		})
		// A value counts as produced once yield returns: buffer values in the
		// buffer, and (capacity 0 or not) one more handed straight across.
		if ahead > buffer+1 {
			t.Errorf("buffer %d: the producer ran %d values ahead", buffer, ahead)
		}
	}
}

func TestBreakingOutOfAllStopsTheProducer(t *testing.T) {
	var yieldErr error
	unwound := false
	run(t, func(wt *weft.Task) {
		c := weft.Generate(wt, 0, func(wt *weft.Task, yield func(int) error) error {
			defer func() { unwound = true }()
			for i := 0; ; i++ {
				if err := yield(i); err != nil {
					yieldErr = err
					return err
				}
			}
		})
		for v := range c.All(wt) {
			if v == 3 {
				break
			}
		}
		wt.Yield() // let the producer unwind
	})
	if !errors.Is(yieldErr, weft.ErrClosed) || !unwound {
		t.Fatalf("after break: yield returned %v, producer unwound %v", yieldErr, unwound)
	}
}

func TestCancellingTheConsumerStopsTheProducer(t *testing.T) {
	var yieldErr error
	unwound := false
	run(t, func(wt *weft.Task) {
		consumer := weft.Go(wt, func(wt *weft.Task) (error, error) {
			c := weft.Generate(wt, 1, func(wt *weft.Task, yield func(int) error) error {
				defer func() { unwound = true }()
				for i := 0; ; i++ {
					if err := yield(i); err != nil {
						yieldErr = err
						return err
					}
				}
			})
			var last error
			for _, err := range c.All(wt) {
				last = err
				wt.Yield()
			}
			return last, nil
		})
		wt.Yield()
		consumer.Cancel()
		last, _ := consumer.Await(wt)
		if !errors.Is(last, context.Canceled) {
			t.Errorf("the consumer's last error = %v", last)
		}
		wt.Yield()
	})
	if yieldErr == nil || !unwound {
		t.Fatalf("after cancel: yield returned %v, producer unwound %v", yieldErr, unwound)
	}
}

func TestGeneratorPanicReachesTheConsumer(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.Generate(wt, 0, func(wt *weft.Task, yield func(string) error) error {
			yield("a")
			panic("generator broke")
		})
		var pe *weft.PanicError
		var vals []string
		for v, err := range c.All(wt) {
			if err != nil {
				if !errors.As(err, &pe) || pe.Value != "generator broke" {
					t.Fatalf("error %v", err)
				}
				continue
			}
			vals = append(vals, v)
		}
		if pe == nil || !slices.Equal(vals, []string{"a"}) {
			t.Fatalf("values %v, panic %v", vals, pe)
		}
	})
}

// An error the producer returns after its consumer left has nobody to go
// to: Run reports it.
func TestGeneratorErrorAfterTheConsumerLeftIsAFailure(t *testing.T) {
	errCleanup := errors.New("cleanup failed")
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		c := weft.Generate(wt, 0, func(wt *weft.Task, yield func(int) error) error {
			for yield(1) == nil {
			}
			return errCleanup
		})
		for range c.All(wt) {
			break
		}
		return struct{}{}, nil
	})
	if !errors.Is(err, errCleanup) {
		t.Fatalf("Run = %v, want the producer's failure", err)
	}
}
