//go:build !weft_envloops

package weft_test

const envLoopsTag = false
