package cpubound

import (
	"bytes"
	"strings"
	"testing"
)

// TestGreedyPrintsEveryServer runs a short `bench greedy` (the clients in
// a child: this test binary, see TestMain) and checks its table.
func TestGreedyPrintsEveryServer(t *testing.T) {
	var out, progress bytes.Buffer
	if err := Greedy(&out, &progress, []string{"-reps", "1", "-rounds", "100", "-servers", "weft,net"}); err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	for _, want := range []string{"alone p99", "greedy: probe p99", "\nweft ", "\nnet "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
	if err := Greedy(&out, &progress, []string{"-servers", "nginx"}); err == nil || !strings.Contains(err.Error(), `no server "nginx"`) {
		t.Errorf("an unknown server: %v", err)
	}
}
