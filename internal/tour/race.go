package tour

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/weft-go/weft"
)

// Race shows Race, a timeout built from Race and a sleep, and All. Race
// does not stop the losers, and Run waits for them: the last line prints at
// about 0.55 s but the program ends at about 0.65 s, when the "sluggish"
// task that lost its timeout finishes its sleep.
func Race(w io.Writer) error {
	slow := func(t *weft.Task, name string, d time.Duration) *weft.Promise[string] {
		return weft.Go(t, func(t *weft.Task) (string, error) {
			if err := t.Sleep(d); err != nil {
				return "", err
			}
			return name, nil
		})
	}
	timeout := func(t *weft.Task, d time.Duration, p *weft.Promise[string]) (string, error) {
		timer := slow(t, "timed out", d)
		return weft.Race(t, p, timer)
	}
	return timedRun(w, func(t *weft.Task) error {
		winner, err := weft.Race(t, slow(t, "tortoise", 300*time.Millisecond), slow(t, "hare", 100*time.Millisecond))
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "race:", winner)
		fast, err := timeout(t, 200*time.Millisecond, slow(t, "quick", 50*time.Millisecond))
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "fast:", fast)
		sluggish, err := timeout(t, 200*time.Millisecond, slow(t, "sluggish", 500*time.Millisecond))
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "slow:", sluggish)
		names, err := weft.All(t, slow(t, "a", 200*time.Millisecond), slow(t, "b", 100*time.Millisecond), slow(t, "c", 150*time.Millisecond))
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "all:", strings.Join(names, " "))
		return nil
	})
}
