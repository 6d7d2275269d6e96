//go:build !unix

package tour

import (
	"errors"
	"io"
)

// Pipe needs fd readiness, which this system's backend lacks.
func Pipe(w io.Writer) error {
	return errors.New("pipe: fd readiness is available on Unix systems only")
}
