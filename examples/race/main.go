// Command race runs the "race" program of weft's tour on its own; the
// program, with its explanation, is internal/tour/race.go. Run them all with
// `go run ./cmd/weft tour`.
package main

import "github.com/weft-go/weft/internal/tour"

func main() { tour.Main("race") }
