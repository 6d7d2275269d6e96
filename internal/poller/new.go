package poller

import (
	"os"
	"strings"
)

// ForcedPortable reports whether the environment asks for the portable
// backend: WEFT_BACKEND=portable, or a build with the weft_portable tag.
func ForcedPortable() bool {
	return buildPortable || strings.EqualFold(os.Getenv("WEFT_BACKEND"), "portable")
}

// New returns a backend of the given kind. Default honours ForcedPortable.
func New(k Kind) (Poller, error) {
	if k == Portable || ForcedPortable() {
		return newPortable()
	}
	return newDefault()
}
