package tour

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/weft-go/weft"
)

// ErrNotFound is the error lookup fails with.
var ErrNotFound = errors.New("not found")

// Exceptions shows a task's error arriving at the Await, where it is
// handled like any Go error, and main's error coming out of Run.
func Exceptions(w io.Writer) error {
	years := map[string]int{"ocaml": 1996, "haskell": 1990}
	lookup := func(t *weft.Task, key string) *weft.Promise[int] {
		return weft.Go(t, func(t *weft.Task) (int, error) {
			if err := t.Sleep(50 * time.Millisecond); err != nil {
				return 0, err
			}
			year, ok := years[key]
			if !ok {
				return 0, fmt.Errorf("lookup %q: %w", key, ErrNotFound)
			}
			return year, nil
		})
	}

	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ok, bad := lookup(t, "ocaml"), lookup(t, "cobol")
		year, err := ok.Await(t)
		if err != nil {
			return struct{}{}, err
		}
		fmt.Fprintf(w, "ocaml: %d\n", year)
		switch year, err := bad.Await(t); {
		case errors.Is(err, ErrNotFound):
			fmt.Fprintln(w, "cobol: not found")
		case err != nil:
			return struct{}{}, err
		default:
			fmt.Fprintf(w, "cobol: %d\n", year)
		}
		return struct{}{}, nil
	})
	if err != nil {
		return err
	}

	year, err := weft.Run(func(t *weft.Task) (int, error) {
		return lookup(t, "cobol").Await(t)
	})
	if errors.Is(err, ErrNotFound) {
		fmt.Fprintln(w, "run re-raised Not_found")
		return nil
	}
	return fmt.Errorf("second run returned %d, %v", year, err)
}
