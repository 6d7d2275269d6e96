//go:build !race

package weft_test

const raceEnabled = false
