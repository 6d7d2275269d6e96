package whttp_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test must leave no goroutine behind: no connection task, no
// helper of the portable backend, no net/http client connection.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
