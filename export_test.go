package weft

import "github.com/weft-go/weft/internal/poller"

// WithPortableBackend forces the portable poll(2) backend (for tests that
// run against both backends).
func WithPortableBackend() Option {
	return func(o *options) { o.backend = poller.Portable }
}

// BackendName reports the poller backend a Run with opts uses.
func BackendName(opts ...Option) string {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	p, err := poller.Open(o.backend, poller.Options{})
	if err != nil {
		return err.Error()
	}
	defer p.Close()
	return p.Caps().Name
}

// PendingTimers reports how many timers t's loop holds.
func PendingTimers(t *Task) int { return t.loop.timers.len() }

// PinTo moves the running task t to loop k of its Run and keeps it there,
// as if it had been started there with Local (tests only: to put the two
// sides of a wake on different loops).
func PinTo(t *Task, k int) {
	if t.loop.id != k {
		t.migrate(t.rs.loops[k], "a test's PinTo")
	}
	t.local = true
}

// GoWhenReadableRecords counts the tasks of t's Run that GoWhenReadable
// made, and how many of them have a taskExtra (an unstarted wait has only
// its own observers' record: prepareUnstarted). It reads, under the run
// lock, only what is written under it or never changes.
func GoWhenReadableRecords(t *Task) (tasks, withExtra int) {
	rs := t.rs
	rs.lock()
	defer rs.unlock()
	rs.walkTasks(func(t *Task) {
		if t.how != spawnGoWhenReadable {
			return
		}
		tasks++
		if t.extra != nil {
			withExtra++
		}
	})
	return tasks, withExtra
}
