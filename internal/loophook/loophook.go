// Package loophook lets weft's own packages (whttp) reach what weft does
// not export: which Run a task belongs to, the end of that Run, the task
// that runs, and a hook run before a task suspends. Package weft sets the
// functions in its init; they are nil until weft is linked in.
package loophook

// Key returns a comparable value naming the Run of t, a *weft.Task: the
// I/O objects of a Run are usable by any of its tasks, on any of its loops
// (a task moves to a connection's loop to use it). It must be called from
// t's own task.
var Key func(t any) any

// AtEnd arranges for f to run on the goroutine that called Run, as the Run
// of t's loop ends (t is a *weft.Task; call it from t's own task). No task
// of the loop runs any more then; I/O objects of the loop can still be
// closed.
var AtEnd func(t any, f func())

// Current returns the *weft.Task whose code runs on the calling goroutine
// (as an any), or nil outside every task: for values handed from task to
// task (a response body) that must find who calls them.
var Current func() any

// Suspender is a suspend hook: see OnSuspend.
type Suspender interface {
	// BeforeSuspend runs once, on the code of the task the hook was
	// armed on, as the task is about to give its loop away for the first
	// time since (a wait, a Yield, a spawn that runs the child first, a
	// preemption, a move to another loop), or reaches the slow path of a
	// Checkpoint. It must not suspend (that panics); a task it starts
	// (weft.Go, TaskGroup.Go, GoIn...) is only queued, and runs once the
	// task has given the loop away.
	BeforeSuspend()
}

// OnSuspend arms h as the suspend hook of t, a *weft.Task, replacing the
// one armed, or disarms it (h nil). Call it from t's own task; it does
// not suspend. A task that never gives its loop away never runs its hook.
var OnSuspend func(t any, h Suspender)
