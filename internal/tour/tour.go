// Package tour holds the programs that define weft's behaviour: the six
// of the OCaml runtime weft grew from (fetch, exceptions, pipe, race,
// deadlock, yield), ported to weft. Each writes to the io.Writer it is given,
// so that `weft tour` can run them all in one process and tests can check
// their output; examples/<name> runs each one on its own.
package tour

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/weft-go/weft"
)

// Program is one entry of the tour.
type Program struct {
	Name string
	Doc  string
	Run  func(w io.Writer) error
}

// Programs lists the tour in the order it is shown.
var Programs = []Program{
	{"fetch", "three tasks sleep concurrently; main awaits all three", Fetch},
	{"exceptions", "a task's error reaches the Await, and Run returns main's", Exceptions},
	{"pipe", "a reader waits for a pipe while a writer and a ticker run", Pipe},
	{"race", "Race and a hand-made timeout; the losers keep running", Race},
	{"race-cancel", "the same with First and Timeout, which cancel the losers", RaceCancel},
	{"deadlock", "main awaits a promise nothing settles; Run says so", Deadlock},
	{"yield", "two workers take turns; then a Task is misused", Yield},
}

// seconds formats the time since start as the programs print it.
func seconds(start time.Time) string {
	return fmt.Sprintf("%.1fs", time.Since(start).Seconds())
}

// timedRun runs main as the main task of a Run and then prints when main
// returned (the race programs' last line) and when Run did (when nothing
// was left running), from when timedRun was called.
func timedRun(w io.Writer, main func(t *weft.Task) error) error {
	start := time.Now()
	var lastLine time.Duration
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		err := main(t)
		lastLine = time.Since(start)
		return struct{}{}, err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "last line at %.2fs, program ended at %.2fs\n", lastLine.Seconds(), time.Since(start).Seconds())
	return nil
}

// Main runs the named program on standard output, as examples/<name> does,
// and exits with status 1 (after printing the error) if it fails.
func Main(name string) {
	for _, p := range Programs {
		if p.Name == name {
			if err := p.Run(os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "tour: no program %q\n", name)
	os.Exit(2)
}
