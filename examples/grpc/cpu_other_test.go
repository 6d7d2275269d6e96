//go:build !linux

package main

// serverChildFromEnv does nothing: the ServerCPU benchmarks
// (cpu_linux_test.go) are Linux's.
func serverChildFromEnv() {}
