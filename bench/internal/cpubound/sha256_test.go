package cpubound

import (
	"bytes"
	"strings"
	"testing"
)

// TestSHA256ComparesTheLoopWithOffload runs `bench sha256` on two small
// messages and checks its report.
func TestSHA256ComparesTheLoopWithOffload(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := SHA256(&out, &errOut, []string{"-size", "1048576", "-n", "2"}); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	s := out.String()
	for _, want := range []string{"2 messages of 1 MiB", "2 tasks on one loop", "Offload(sha256.Sum256)", "speed-up of Offload over the loop:", "digests: all 2 match"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// TestFilledMessagesAreDeterministicAndDistinct checks fillMessages.
func TestFilledMessagesAreDeterministicAndDistinct(t *testing.T) {
	a, b := fillMessages(2, 1001), fillMessages(2, 1001)
	if !bytes.Equal(a[0], b[0]) || !bytes.Equal(a[1], b[1]) {
		t.Error("two fills differ")
	}
	if bytes.Equal(a[0], a[1]) || bytes.Count(a[0], []byte{0}) > 100 {
		t.Error("messages are alike or mostly zero")
	}
}
