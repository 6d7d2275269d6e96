//go:build !unix

package whttp_test

// processCPU is 0 where getrusage is missing: the cpu-ns/op metric is
// then meaningless.
func processCPU() int64 { return 0 }
