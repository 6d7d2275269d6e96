//go:build !weft_portable

package poller

const buildPortable = false
