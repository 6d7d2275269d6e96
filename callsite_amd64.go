package weft

// callerPC returns the PC at which the function calling callerPC was
// called: the user's call site of Go, First, Group.Go and the like, read
// from the frame pointer in about 3 ns (runtime.Callers costs ~200 ns here,
// which would double the cost of a spawn). The calling function must not be
// inlined, so every caller is marked //go:noinline. A test checks that the
// reported file:line is the call site.
func callerPC() uintptr

// fpCallers fills pcs with the return addresses of the calling function's
// callers (innermost first) by walking frame pointers, and returns how many
// it stored: a few nanoseconds, where runtime.Callers costs ~250 ns. The
// PCs are return addresses, as runtime.Callers gives, for CallersFrames.
//
//go:noescape
func fpCallers(pcs []uintptr) int
