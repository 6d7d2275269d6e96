package whttp

import "testing"

// parseChunkLine's bounds: 16 hex digits at most, below 2^63, extensions
// per the grammar.
func TestParseChunkLine(t *testing.T) {
	for line, want := range map[string]int64{
		"0": 0, "a": 10, "FFFF": 65535, "7fffffffffffffff": 1<<63 - 1, "0000000000000005": 5,
		"5;a": 5, "5;a=b": 5, "5; a = b ;c": 5, `5;a="x y\"z"`: 5, "5 ": 5, "5;a=b ": 5,
	} {
		if n, err := parseChunkLine(line); err != nil || n != want {
			t.Errorf("%q: %d, %v; want %d", line, n, err, want)
		}
	}
	for _, line := range []string{
		"", "x", "-1", "+1", "0x5", "8000000000000000", "00000000000000005", " 5", "5 ;a",
		"5;", "5;=b", "5;a=", `5;a="b`, "5;a\x00", "5;a=b c", "5,a", "5;a=\x7f",
	} {
		if n, err := parseChunkLine(line); err == nil {
			t.Errorf("%q: accepted as %d", line, n)
		}
	}
}
