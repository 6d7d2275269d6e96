package tour

import (
	"fmt"
	"io"

	"github.com/weft-go/weft"
)

// Yield shows the scheduling order directly: two workers print and yield
// three times each. Go runs the child first, so worker a prints a1 before
// main has started worker b, and a2 comes before b1 because a was queued
// again before b started. Then the program keeps a *Task past the end of its
// task and uses it, which panics with a "weft:" message.
func Yield(w io.Writer) error {
	var leaked *weft.Task
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		leaked = t
		worker := func(name string) *weft.Promise[struct{}] {
			return weft.Go(t, func(t *weft.Task) (struct{}, error) {
				for i := 1; i <= 3; i++ {
					fmt.Fprintf(w, "%s%d ", name, i)
					if err := t.Yield(); err != nil {
						return struct{}{}, err
					}
				}
				return struct{}{}, nil
			})
		}
		a, b := worker("a"), worker("b")
		_, err := weft.All(t, a, b)
		return struct{}{}, err
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "using the Task after its task finished:", recoverMessage(func() { leaked.Yield() }))
	return nil
}

func recoverMessage(f func()) (msg any) {
	defer func() { msg = recover() }()
	f()
	return "no panic"
}
