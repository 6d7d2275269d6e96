// Command race-cancel runs the "race-cancel" program of weft's tour on its own. The
// program itself, with its explanation, is in internal/tour/racecancel.go; run all
// of them with `go run ./cmd/weft tour`.
package main

import (
	"fmt"
	"os"

	"github.com/weft-go/weft/internal/tour"
)

func main() {
	if err := tour.RaceCancel(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
