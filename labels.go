package weft

// Profiler labels. A task runs on a pooled coroutine, which is a goroutine:
// labels set by one task (pprof.SetGoroutineLabels, pprof.Do) would stay on
// the coroutine and be seen by the next task it runs. So each task starts
// with the labels of the goroutine that called Run, read once when Run
// starts. The runtime keeps a goroutine's labels as one pointer, which
// runtime/pprof reads and writes through these two functions (the runtime
// provides them to pprof by linkname): setting a task's labels costs one
// store.

import (
	"unsafe"
	_ "unsafe" // for go:linkname
)

//go:linkname getProfLabel runtime/pprof.runtime_getProfLabel
func getProfLabel() unsafe.Pointer

//go:linkname setProfLabel runtime/pprof.runtime_setProfLabel
func setProfLabel(labels unsafe.Pointer)
