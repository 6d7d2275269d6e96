//go:build linux

package servers

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// missing says why there is no server for the tests, if there is none.
var missing string

// Main is a test binary's TestMain body for tests against one server: it
// starts the server with start and hands it to use, runs the tests, stops
// the server by its pid, and fails if goroutines are left. Without the
// server's binary the tests still run, and every one that calls Need
// skips, saying why. It returns the exit code.
func Main(m *testing.M, start func() (*Server, error), use func(*Server)) int {
	srv, err := start()
	switch {
	case errors.Is(err, ErrMissing):
		missing = err.Error()
		return m.Run()
	case err != nil:
		fmt.Fprintln(os.Stderr, "starting the server:", err)
		return 1
	}
	use(srv)
	code := m.Run()
	if err := srv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the server:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left:", err)
			code = 1
		}
	}
	return code
}

// Need skips t if Main found no server binary.
func Need(t testing.TB) {
	t.Helper()
	if missing != "" {
		t.Skip("no server to test against: " + missing)
	}
}
