// Command deadlock runs the "deadlock" program of weft's tour on its own; the
// program, with its explanation, is internal/tour/deadlock.go. Run them all with
// `go run ./cmd/weft tour`.
package main

import "github.com/weft-go/weft/internal/tour"

func main() { tour.Main("deadlock") }
