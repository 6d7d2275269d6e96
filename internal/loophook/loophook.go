// Package loophook lets weft's own packages (whttp) reach two facts about a
// loop that weft does not export: which Run a task belongs to, and the end of
// that Run. Package weft sets the functions in its init; they are
// nil until weft is linked in.
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
