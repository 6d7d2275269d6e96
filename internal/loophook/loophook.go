// Package loophook lets weft's own packages (whttp) reach two facts about a
// loop that weft does not export: which loop a task runs on, and the end of
// that loop's Run. Package weft sets the functions in its init; they are
// nil until weft is linked in.
package loophook

// Key returns a comparable value naming the loop of t, a *weft.Task. It
// must be called from t's own task.
var Key func(t any) any

// AtEnd arranges for f to run on the goroutine that called Run, as the Run
// of t's loop ends (t is a *weft.Task; call it from t's own task). No task
// of the loop runs any more then; I/O objects of the loop can still be
// closed.
var AtEnd func(t any, f func())
