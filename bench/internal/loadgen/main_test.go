package loadgen

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the package's tests leave no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
