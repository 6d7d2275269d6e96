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
	}{{"default", nil}, {"portable", []weft.Option{weft.WithPortableBackend()}}} {
		t.Run(b.name+"-"+weft.BackendName(b.opts...), func(t *testing.T) { f(t, b.opts...) })
	}
}
