package weft_test

import (
	"fmt"

	"github.com/weft-go/weft"
)

// Several loops: CPU-bound tasks spread over them, and the results come
// back through their promises, in the order they are awaited.
func ExampleWithLoops() {
	sum := func(from, to int) func(*weft.Task) (int, error) {
		return func(t *weft.Task) (int, error) {
			s := 0
			for i := from; i < to; i++ {
				s += i
				if i%1000 == 0 {
					if err := t.Checkpoint(); err != nil {
						return 0, err
					}
				}
			}
			return s, nil
		}
	}
	total, _ := weft.Run(func(t *weft.Task) (int, error) {
		var parts []*weft.Promise[int]
		for k := range 4 {
			parts = append(parts, weft.Go(t, sum(k*1_000_000, (k+1)*1_000_000)))
		}
		vs, err := weft.All(t, parts...)
		total := 0
		for _, v := range vs {
			total += v
		}
		return total, err
	}, weft.WithLoops(2))
	fmt.Println(total)
	// Output: 7999998000000
}

// Local tasks stay on their loop, so a Local task and the Local tasks it
// starts may share plain variables without locks, even when the Run has
// several loops.
func ExampleLocal() {
	n, _ := weft.Run(func(t *weft.Task) (int, error) {
		return weft.Local(t, counter).Await(t)
	}, weft.WithLoops(4))
	fmt.Println(n)
	// Output: 1000
}

// counter runs 100 Local tasks that each add 1 ten times to a variable
// they share.
func counter(t *weft.Task) (int, error) {
	count, loop := 0, t.Loop()
	var ps []*weft.Promise[struct{}]
	for range 100 {
		ps = append(ps, weft.Local(t, func(t *weft.Task) (struct{}, error) {
			for range 10 {
				count++ // the same loop as the parent: never in parallel
				if t.Loop() != loop {
					panic("a Local task moved")
				}
				if err := t.Yield(); err != nil {
					return struct{}{}, err
				}
			}
			return struct{}{}, nil
		}))
	}
	_, err := weft.All(t, ps...)
	return count, err
}
