//go:build weft_envloops

package weft_test

// envLoopsTag: this test binary was built with weft_envloops (WEFT_LOOPS
// sets the default loop count of every Run).
const envLoopsTag = true
