// Command exceptions runs the "exceptions" program of weft's tour on its own; the
// program, with its explanation, is internal/tour/exceptions.go. Run them all with
// `go run ./cmd/weft tour`.
package main

import "github.com/weft-go/weft/internal/tour"

func main() { tour.Main("exceptions") }
