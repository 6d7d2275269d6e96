package tour

import (
	"fmt"
	"io"
	"time"

	"github.com/weft-go/weft"
)

// Fetch starts three tasks that sleep for different times, and awaits all
// three: the total time is that of the slowest, not the sum.
func Fetch(w io.Writer) error {
	start := time.Now()
	fetch := func(t *weft.Task, name string, d time.Duration) *weft.Promise[int] {
		return weft.Go(t, func(t *weft.Task) (int, error) {
			fmt.Fprintf(w, "%-5s start\n", name)
			if err := t.Sleep(d); err != nil {
				return 0, err
			}
			fmt.Fprintf(w, "%-5s done after %s\n", name, seconds(start))
			return len(name), nil
		})
	}
	total, err := weft.Run(func(t *weft.Task) (int, error) {
		a := fetch(t, "alpha", 300*time.Millisecond)
		b := fetch(t, "beta", 100*time.Millisecond)
		c := fetch(t, "gamma", 200*time.Millisecond)
		vals, err := weft.All(t, a, b, c)
		if err != nil {
			return 0, err
		}
		return vals[0] + vals[1] + vals[2], nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "total %d in %s\n", total, seconds(start))
	return nil
}
