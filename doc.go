// Package weft is an async runtime for Go: many small tasks run
// cooperatively on an event loop, in direct style.
//
// A task is an ordinary function that receives a *Task. It calls Sleep,
// Await or Readable in the middle of its code and is suspended there, on a
// coroutine, while other tasks run; no callback, no channel, no goroutine
// per task. Go starts a task and returns a *Promise of its result; Await
// suspends until a promise settles and returns the value and the error.
//
//	total, err := weft.Run(func(t *weft.Task) (int, error) {
//		a := weft.Go(t, func(t *weft.Task) (int, error) {
//			t.Sleep(300 * time.Millisecond)
//			return 1, nil
//		})
//		b := weft.Go(t, func(t *weft.Task) (int, error) {
//			t.Sleep(100 * time.Millisecond)
//			return 2, nil
//		})
//		vals, err := weft.All(t, a, b) // 0.3 s in all, not 0.4
//		return vals[0] + vals[1], err
//	})
//
// # The loop
//
// Run starts a loop on the calling goroutine and runs main as its first
// task. The loop owns a run queue (first in, first out), a heap of timers,
// and the readiness of file descriptors (epoll on Linux, poll(2) on other
// Unix systems). It runs one task at a time; a task runs until it suspends.
// When no task is runnable the loop sleeps in the kernel until the next
// timer, fd event or wake from another goroutine, so an idle loop costs no
// CPU. Run returns when no task is left, and reports a deadlock (naming
// every stuck task and the line where it waits) instead of hanging.
//
// Because one loop runs one task at a time in a defined order, a weft
// program's schedule is deterministic: the same program gives the same
// interleaving. WithVirtualTime makes time deterministic too.
//
// # Scheduling points
//
// A task gives up the loop only where its code says so. These calls can
// suspend: Go (the child runs first), Yield, Sleep, Await, All, Race,
// Readable and Writable, the I/O operations, and the waits on channels,
// locks and events (Chan.Send, Chan.Recv, Select, Mutex.Lock,
// Semaphore.Acquire, Event.Wait). Each documents whether it suspends and
// what it returns when the task is cancelled. Awaiting a promise that has
// already settled does not suspend, unlike await in JavaScript.
//
// # Fairness
//
// A loop is a scheduler, not a lock. A CPU-bound task should call
// Checkpoint every so often (it costs a few nanoseconds when no switch is
// due): when an event wakes another task (an fd is ready, a timer is due, a
// promise is settled from elsewhere), the CPU-bound task gives way at its
// next Checkpoint, within microseconds, rather than at the end of a time
// slice; so I/O-bound tasks are not held up by CPU-bound ones (the "convoy
// effect" of CPython's GIL). CPU-bound tasks share the loop by the switch
// interval (WithSwitchInterval, 5 ms by default) in a batch lane that runs
// behind interactive tasks but at least once per interval. A task that keeps
// finding results ready (awaiting settled promises, reads that return at
// once) yields after 128 of them. Heavy work can leave the loop altogether
// with Offload, which runs it in parallel on other cores.
//
// Never block a task on a Go channel, a mutex or a blocking call: that
// stalls every task of the loop. Use weft's waits (Chan, Select, Mutex,
// Semaphore, Event), or Offload. Plain goroutines reach tasks through the
// same channels (SendWait, RecvWait) and through NewPromiseExternal.
//
// # Errors and panics
//
// A task's error goes to whoever awaits its promise, and errors.Is works
// on it. A panic in a task is recovered into a *PanicError carrying the
// value and the stack, delivered the same way; the loop goes on. Nothing
// fails silently: a failure that no Await observed is joined to Run's
// error.
//
// # Costs
//
// A spawn costs one allocation of about 160 bytes and a coroutine switch
// there and back (roughly 0.3 µs on a 2-core VM, half of a goroutine spawn
// and join); coroutines are pooled. A suspended task costs about 3 KB, a
// little more than a parked goroutine, because each task has its own stack.
// `cd bench && go run . core` measures both beside their Go-native twins.
//
// # Misuse
//
// A *Task belongs to its task. Using it from another task, from another
// goroutine, or after its task finished panics with a message starting
// "weft:". Run called from inside a task returns ErrNestedRun.
package weft
