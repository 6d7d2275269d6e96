package weft_test

import (
	"strings"
	"testing"

	"github.com/weft-go/weft"
)

func TestStatsSayWhichBackendRuns(t *testing.T) {
	for _, b := range []weft.Backend{weft.BackendDefault, weft.BackendEpoll, weft.BackendIOUring, weft.BackendPortable} {
		for _, loops := range []int{1, 2} {
			got, err := weft.Run(func(wt *weft.Task) (weft.Backend, error) {
				return weft.RunStats(wt).Backend, nil
			}, weft.WithBackend(b), weft.WithLoops(loops))
			if err != nil {
				t.Fatal(err)
			}
			want := weft.Backend(weft.BackendName(weft.WithBackend(b)))
			if want == "poll" {
				want = weft.BackendPortable
			}
			if got != want || got == "" {
				t.Errorf("WithBackend(%q), %d loops: Stats.Backend %q, want %q", b, loops, got, want)
			}
		}
	}
}

func TestWithBackendRejectsAnUnknownName(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (int, error) { return 1, nil }, weft.WithBackend("kqueue"))
	if err == nil || !strings.Contains(err.Error(), "kqueue") {
		t.Fatalf("Run with an unknown backend: %v", err)
	}
}
