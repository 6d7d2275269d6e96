package trace

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the package's tests leave no goroutine behind (a
// stream's writer ends with Close).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
