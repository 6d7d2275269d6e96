package weft

// Finish hooks: callbacks run when a task finishes, for what the layers
// built on the core tie to a task's life (a Ticker's timer, a Signal
// subscription, the keep-alive of NewPromiseExternal). They are the core's
// only way to call back into a layer, and they know nothing about it.
//
// A task's hooks form a list in its taskExtra, newest first. Task.finish
// runs them, newest first, like deferred calls, after the task's function
// has returned (or panicked) and before the task leaves the spawn tree. A
// hook runs on the task's loop; it must not use the Task and must not
// suspend. Everything here is loop-owned.

// finishHook is one callback registered with a task.
type finishHook struct {
	fn         func()
	task       *Task // the task h is registered with; nil when not registered
	prev, next *finishHook
}

// onFinish registers h to run when t finishes. Call it on t's loop, while
// t has not finished, with an h that is not registered.
func (t *Task) onFinish(h *finishHook) {
	r := t.ensureRare()
	h.task = t
	h.prev, h.next = nil, r.finish
	if r.finish != nil {
		r.finish.prev = h
	}
	r.finish = h
}

// remove unregisters h if it is registered (it has not run). Call it on
// its task's loop.
func (h *finishHook) remove() {
	t := h.task
	if t == nil {
		return
	}
	if h.prev != nil {
		h.prev.next = h.next
	} else {
		t.extra.rare.Load().finish = h.next
	}
	if h.next != nil {
		h.next.prev = h.prev
	}
	h.task, h.prev, h.next = nil, nil, nil
}

// runFinishHooks runs and unregisters t's hooks, newest first. A hook may
// remove others that have not run.
func (t *Task) runFinishHooks() {
	for r := t.extra.rare.Load(); r.finish != nil; {
		h := r.finish
		h.remove()
		h.fn()
	}
}
