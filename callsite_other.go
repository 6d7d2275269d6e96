//go:build !amd64

package weft

import "runtime"

// callerPC returns the PC at which the function calling callerPC was
// called. This portable version walks the stack with runtime.Callers.
func callerPC() uintptr {
	var pc [1]uintptr
	runtime.Callers(3, pc[:])
	return pc[0]
}

// fpCallers fills pcs with the return addresses of the calling function's
// callers, innermost first, and returns how many it stored.
func fpCallers(pcs []uintptr) int {
	return runtime.Callers(3, pcs)
}
