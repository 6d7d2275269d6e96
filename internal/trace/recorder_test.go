package trace

import (
	"strings"
	"testing"
)

// TestNewBufferRefusesRunZero checks the numbering NewBuffer asks for: a
// run 0 would be pid 0, which viewers treat as no process.
func TestNewBufferRefusesRunZero(t *testing.T) {
	r := NewRing(0, 0)
	defer r.Close()
	for _, c := range [][2]int{{0, 0}, {1, -1}} {
		func() {
			defer func() {
				if p, _ := recover().(string); !strings.HasPrefix(p, "weft: ") {
					t.Errorf("NewBuffer(%d, %d) did not panic with a weft: message: %q", c[0], c[1], p)
				}
			}()
			r.NewBuffer(c[0], c[1])
		}()
	}
}
