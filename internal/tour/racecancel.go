package tour

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/weft-go/weft"
)

// RaceCancel is Race with weft's cancelling combinators: First runs the
// tortoise and the hare and cancels the loser, and Timeout cancels the
// sluggish task when its 0.2 s are up. Nothing is left running after the
// last line, so the program ends with it, at about 0.55 s instead of 0.65.
func RaceCancel(w io.Writer) error {
	slow := func(name string, d time.Duration) func(t *weft.Task) (string, error) {
		return func(t *weft.Task) (string, error) {
			if err := t.Sleep(d); err != nil {
				return "", err // cancelled: the sleep ended early
			}
			return name, nil
		}
	}
	timeout := func(t *weft.Task, d time.Duration, f func(t *weft.Task) (string, error)) (string, error) {
		v, err := weft.Timeout(t, d, f)
		if errors.Is(err, weft.ErrTimeout) {
			return "timed out", nil
		}
		return v, err
	}
	return timedRun(w, func(t *weft.Task) error {
		winner, err := weft.First(t, slow("tortoise", 300*time.Millisecond), slow("hare", 100*time.Millisecond))
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "race:", winner)
		fast, err := timeout(t, 200*time.Millisecond, slow("quick", 50*time.Millisecond))
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "fast:", fast)
		sluggish, err := timeout(t, 200*time.Millisecond, slow("sluggish", 500*time.Millisecond))
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "slow:", sluggish)
		names, err := weft.All(t,
			weft.Go(t, slow("a", 200*time.Millisecond)),
			weft.Go(t, slow("b", 100*time.Millisecond)),
			weft.Go(t, slow("c", 150*time.Millisecond)))
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "all:", strings.Join(names, " "))
		return nil
	})
}
