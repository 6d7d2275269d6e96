package weft

// Failures nobody observed.
//
// A task that fails (an error or a panic, not a cancellation) and whose
// promise nobody has awaited yet gets a failure record when it finishes.
// Awaiting the promise later (Await, All, Race, a group) marks the record
// handled. The record is what Run reports and what may be logged; it holds
// no reference to the task, so a promise the program dropped can be
// collected:
//
//   - Run keeps the first keptFailures records and only counts the rest
//     (failures still unhandled when Run ends), so a long-running program
//     holds bounded memory however many detached tasks fail. Run's error
//     joins the kept ones, in full, and says how many more there were.
//   - When a failed task's promise becomes unreachable while its record is
//     unhandled, nobody can ever observe the failure: a cleanup
//     (runtime.AddCleanup) logs it at Error level through the Run's logger,
//     as asyncio logs "Task exception was never retrieved". A failure
//     awaited late is never logged: its promise is reachable until then.
//     Once Run has returned (its error reported everything), nothing more
//     is logged.

import (
	"fmt"
	"log/slog"
	"sync/atomic"
)

// keptFailures is how many unobserved failures Run keeps in full.
const keptFailures = 64

// failureRecord describes a failed task for Run's report and the log.
type failureRecord struct {
	err      error
	id       uint32
	funcPC   uintptr
	spawnPC  uintptr
	given    string // the task's SetName name
	handled  atomic.Bool
	overflow bool           // beyond keptFailures: only counted
	report   *failureReport // shared by the Run's records
}

// failureReport is what a Run's failure records share.
type failureReport struct {
	logger   *slog.Logger // nil: do not log
	overflow atomic.Int64 // unhandled failures beyond keptFailures
	ended    atomic.Bool  // Run has returned its error
}

// noteFailure records the failure of t, which has just finished.
func (rs *runState) noteFailure(t *Task, err error) {
	if t.job.promiseCore().handled() {
		return // a group (or its handler) took it
	}
	rec := &failureRecord{
		err:     err,
		id:      t.id,
		funcPC:  t.job.funcPC(),
		given:   t.givenName(),
		spawnPC: t.spawnPC,
		report:  rs.report,
	}
	t.ensureRare().failure = rec
	rs.lock()
	if len(rs.failures) < keptFailures {
		rs.failures = append(rs.failures, rec)
	} else {
		rec.overflow = true
		rs.report.overflow.Add(1)
	}
	rs.unlock()
	if rs.report.logger != nil {
		t.job.logIfDropped(rec)
	}
}

// observed marks the failure of the task behind p handled: someone has
// been given it. Only the caller that set the handled flag gets here.
func (p *promise) observed() {
	t := p.task
	if t == nil {
		return
	}
	r := t.rareOf()
	if r == nil || r.failure == nil {
		return
	}
	rec := r.failure
	if rec.handled.CompareAndSwap(false, true) && rec.overflow {
		rec.report.overflow.Add(-1)
	}
}

// logDropped is the cleanup of a failed task's cell: the promise is gone,
// so the failure can never be observed.
func logDropped(rec *failureRecord) {
	r := rec.report
	if rec.handled.Load() || r.ended.Load() || r.logger == nil {
		return
	}
	r.logger.Error("weft: a task failed and nothing awaited it; its promise is gone",
		"task", rec.name(), "func", funcNameOf(rec.funcPC), "started", rec.site(), "err", rec.err)
}

func (rec *failureRecord) name() string {
	if rec.given != "" {
		return fmt.Sprintf("task %d %q", rec.id, rec.given)
	}
	return fmt.Sprintf("task %d", rec.id)
}

func (rec *failureRecord) site() string { return pcSite(rec.spawnPC) }

// unobservedErrors returns Run's report of the failures nobody observed,
// and stops the logging.
func (rs *runState) unobservedErrors() []error {
	rs.report.ended.Store(true)
	var errs []error
	for _, rec := range rs.failures {
		if !rec.handled.Load() {
			errs = append(errs, fmt.Errorf("weft: %s (%s, started at %s) failed and nothing awaited it: %w",
				rec.name(), funcNameOf(rec.funcPC), rec.site(), rec.err))
		}
	}
	if n := rs.report.overflow.Load(); n > 0 {
		errs = append(errs, fmt.Errorf("weft: and %d more failures nothing awaited (only the first %d are kept)", n, keptFailures))
	}
	return errs
}

// WithLogger sets the logger a Run reports through: failures of tasks
// whose promise was dropped without being awaited (at Error level, when the
// garbage collector finds the promise unreachable), and warnings such as
// Accept running out of file descriptors. The default is slog.Default() at
// the time Run starts. WithLogger(nil) turns the reports off (Run's error
// still lists unobserved failures).
func WithLogger(logger *slog.Logger) Option {
	return func(o *options) {
		o.logger = logger
		o.loggerSet = true
	}
}
