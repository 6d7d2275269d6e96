package weft

// callerPC returns the PC at which the function calling callerPC was
// called: the user's call site of Go, First, Group.Go and the like, read
// from the frame pointer in about 3 ns (runtime.Callers costs ~200 ns here,
// which would double the cost of a spawn). The calling function must not be
// inlined, so every caller is marked //go:noinline. A test checks that the
// reported file:line is the call site.
func callerPC() uintptr
