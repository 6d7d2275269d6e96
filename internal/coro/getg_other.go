//go:build !amd64 && !arm64

package coro

// HaveGetg reports whether Getg identifies goroutines on this platform.
const HaveGetg = false

// Getg returns 0 on platforms without a goroutine identifier; callers then
// fall back to weaker checks.
func Getg() uintptr { return 0 }
