//go:build weft_portable

package poller

// buildPortable: the build has the weft_portable tag, so Open hands out
// the portable backend whatever kind is asked for.
const buildPortable = true
