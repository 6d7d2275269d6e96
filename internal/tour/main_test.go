package tour

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// The tour's programs define one loop's schedule (their output is its
// order): they run on one loop, whatever WEFT_LOOPS says.
func TestMain(m *testing.M) {
	os.Setenv("WEFT_LOOPS", "1")
	goleak.VerifyTestMain(m)
}
