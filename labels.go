package weft

// Profiler labels. A task runs on a pooled coroutine, which is a goroutine:
// labels set by one task (pprof.SetGoroutineLabels, pprof.Do) would stay on
// the coroutine and be seen by the next task it runs. So each task starts
// with the labels of the goroutine that called Run, read once when Run
// starts. The runtime keeps a goroutine's labels as one pointer, which
// runtime/pprof reads and writes through these two functions (the runtime
// provides them to pprof by linkname): setting a task's labels costs one
// store (getProfLabel, setProfLabel, at the end of this file).
//
// The profiler label weft.task: while a task runs, its goroutine carries
// the labels of the code that called Run plus weft.task, set to the
// task's name (SetName) or else its function, so that a CPU profile
// attributes time to tasks (go tool pprof -tagfocus, -tags).
//
// runtime/pprof keeps a goroutine's labels as a pointer to its labelMap,
// a sorted list of key-value pairs, which it reads back only when it
// writes a profile. weft builds label maps of the same layout itself (a
// check at init compares the layout with one runtime/pprof made; if it
// differs, tasks get the Run's labels only), once per function per loop,
// and sets one with a single store at each task's start.

import (
	"context"
	"runtime/pprof"
	"slices"
	"strings"
	"unsafe"
)

// taskLabelKey is the label's key.
const taskLabelKey = "weft.task"

// profLabel and profLabelMap mirror runtime/pprof's label.Label and
// labelMap.
type profLabel struct{ key, value string }
type profLabelMap struct{ list []profLabel }

// labelsMirrored reports whether profLabelMap matches runtime/pprof's
// layout, checked once.
var labelsMirrored = func() bool {
	old := getProfLabel()
	defer setProfLabel(old)
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("a", "1", "b", "2")))
	p := (*profLabelMap)(getProfLabel())
	return p != nil && slices.Equal(p.list, []profLabel{{"a", "1"}, {"b", "2"}})
}()

// withTaskLabel returns base's labels with weft.task set to value.
func withTaskLabel(base unsafe.Pointer, value string) unsafe.Pointer {
	var list []profLabel
	if base != nil {
		list = (*profLabelMap)(base).list
	}
	out := make([]profLabel, 0, len(list)+1)
	added := false
	for _, l := range list {
		switch c := strings.Compare(l.key, taskLabelKey); {
		case c == 0:
			continue
		case c > 0 && !added:
			out = append(out, profLabel{taskLabelKey, value})
			added = true
		}
		out = append(out, l)
	}
	if !added {
		out = append(out, profLabel{taskLabelKey, value})
	}
	return unsafe.Pointer(&profLabelMap{list: out})
}

// startLabels returns the labels t starts with: its Run's, with weft.task
// its function's name (made once per function on each loop).
func (t *Task) startLabels() unsafe.Pointer {
	rs := t.rs
	if !labelsMirrored || rs.obs.noLabels {
		return rs.labels
	}
	l := t.loop
	pc := t.job.funcPC()
	if p, ok := l.obs.labels[pc]; ok {
		return p
	}
	if l.obs.labels == nil {
		l.obs.labels = map[uintptr]unsafe.Pointer{}
	}
	p := withTaskLabel(rs.labels, shortFuncName(funcNameOf(pc)))
	l.obs.labels[pc] = p
	return p
}

// nameLabel gives the running task t's goroutine the label of its new
// name.
func (t *Task) nameLabel() {
	if labelsMirrored && !t.rs.obs.noLabels {
		setProfLabel(withTaskLabel(t.rs.labels, t.ownName()))
	}
}

// WithTaskLabels sets whether each task's goroutine carries the profiler
// label weft.task (its name, or its function) while it runs, on top of
// the labels of the code that called Run (the default is on). The label
// costs a map lookup per spawn; off, tasks carry only Run's labels.
func WithTaskLabels(on bool) Option {
	return func(o *options) { o.obs.noLabels = !on }
}

//go:linkname getProfLabel runtime/pprof.runtime_getProfLabel
func getProfLabel() unsafe.Pointer

//go:linkname setProfLabel runtime/pprof.runtime_setProfLabel
func setProfLabel(labels unsafe.Pointer)
