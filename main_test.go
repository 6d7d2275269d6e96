package weft_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test in the package must leave no goroutine behind: no coroutine,
// no helper, no pool worker.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
