//go:build !weft_portable

package poller

// buildPortable: the build has no weft_portable tag; Open hands out the
// kind asked for.
const buildPortable = false
