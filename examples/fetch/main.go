// Command fetch runs the "fetch" program of weft's tour on its own; the
// program, with its explanation, is internal/tour/fetch.go. Run them all with
// `go run ./cmd/weft tour`.
package main

import "github.com/weft-go/weft/internal/tour"

func main() { tour.Main("fetch") }
