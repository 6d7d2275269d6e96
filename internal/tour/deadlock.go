package tour

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/weft-go/weft"
)

// Deadlock awaits a promise that nothing will ever settle. Instead of
// hanging, Run returns a *DeadlockError that names the stuck task and the
// line where it waits; the program prints its first line.
func Deadlock(w io.Writer) error {
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		p, _ := weft.NewPromise[int]()
		return p.Await(t)
	})
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		return fmt.Errorf("expected a deadlock, got %v", err)
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	fmt.Fprintln(w, first)
	return nil
}
