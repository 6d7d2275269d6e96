package weft_test

import (
	"testing"

	"github.com/weft-go/weft"
)

// backends runs f once per poller backend.
func backends(t *testing.T, f func(t *testing.T, opts ...weft.Option)) {
	for _, b := range []struct {
		name string
		opts []weft.Option
	}{
		{"default", nil},
		{"portable", []weft.Option{weft.WithPortableBackend()}},
		{"uring", []weft.Option{weft.WithBackend(weft.BackendIOUring)}},
	} {
		name := weft.BackendName(b.opts...)
		if b.name == "uring" && (name != "io_uring" || weft.BackendName() == "io_uring") {
			continue // no io_uring here, or the default run is it already
		}
		t.Run(b.name+"-"+name, func(t *testing.T) { f(t, b.opts...) })
	}
}
