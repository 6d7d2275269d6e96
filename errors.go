package weft

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
)

// PanicError is the error of a task that panicked. Await (and Run, for a
// failure nobody awaited) returns it in place of the task's result. The
// loop recovers the panic and carries on.
//
// A panic that weft itself raises for a misuse (its message starts with
// "weft: ": a Task used outside its task, a nil function, ...) is a bug,
// not a failure: it is never handed on as an error value. Whoever waits
// for the task (Await, All, Race, First, Group, Offload, a Recv on a
// Generate's channel, Run) panics in turn, with the original message and
// the stack of the misuse.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack, as runtime/debug.Stack prints it

	misuse bool // Value is a "weft:" misuse panic: re-raised, not returned (reraiseMisuse)
}

func newPanicError(v any) *PanicError {
	return &PanicError{Value: v, Stack: debug.Stack(), misuse: isMisuse(v)}
}

// isMisuse reports whether a panic value is one of weft's own "weft:"
// panics, raised for a programming error.
func isMisuse(v any) bool {
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, "weft: ")
}

// misuseMark starts the part of a re-raised misuse panic that says where
// the misuse happened.
const misuseMark = "weft: the misuse happened in a task this one waited for, here:"

// misuseMessage is what a misuse panic is re-raised with: the original
// message, then (once, however many waiters it passes through) the stack
// of the misuse.
func (e *PanicError) misuseMessage() string {
	s, _ := e.Value.(string)
	if strings.Contains(s, misuseMark) {
		return s
	}
	return s + "\n\n" + misuseMark + "\n" + string(e.Stack)
}

// misuseIn returns the misuse panic err carries, if any, looking through
// wrapped and joined errors.
func misuseIn(err error) *PanicError {
	switch e := err.(type) {
	case nil:
		return nil
	case *PanicError:
		if e.misuse {
			return e
		}
		return nil
	case interface{ Unwrap() []error }:
		for _, err := range e.Unwrap() {
			if m := misuseIn(err); m != nil {
				return m
			}
		}
		return nil
	case interface{ Unwrap() error }:
		return misuseIn(e.Unwrap())
	}
	return nil
}

// reraiseMisuse re-raises, in the caller, a misuse panic that err
// carries (see PanicError); otherwise it returns err.
func reraiseMisuse(err error) error {
	if m := misuseIn(err); m != nil {
		panic(m.misuseMessage())
	}
	return err
}

// Error returns the panic value and the stack of the panic. It does not
// suspend.
func (e *PanicError) Error() string {
	return fmt.Sprintf("weft: task panicked: %v\n\n%s", e.Value, e.Stack)
}

// Unwrap returns the panic value if it is an error, so that errors.Is and
// errors.As see through a panic(err). It does not suspend.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// DeadlockError is what Run returns when tasks wait on promises that
// nothing can ever settle: no task is runnable, and no timer, fd wait or
// off-loop work remains that could wake one.
//
// If main is among the blocked tasks, Run returns the DeadlockError in place
// of main's result. If main has finished, Run returns main's result with
// the DeadlockError joined to its error. Either way the blocked tasks are
// then unwound: their pending wait returns the DeadlockError (as does any
// promise wait they start afterwards), so that their deferred calls run and
// Run leaves no goroutine behind.
type DeadlockError struct {
	// MainBlocked reports whether main is one of the blocked tasks.
	MainBlocked bool
	// Blocked lists the blocked tasks, in the order they were started.
	Blocked []BlockedTask
}

// BlockedTask describes a task found waiting in a deadlock.
type BlockedTask struct {
	Name    string // "main" or "task N", N counting spawns from 1 (main)
	Func    string // the function the task runs: the user's, also for a group's task
	Started string // file:line where it was started (Go, First, Group.Go); "Run" for main
	Op      string // what it waits in: "Await", "All", "Race", "Group", "First", "Chan.Recv", ...
	Waiting string // file:line of that call in the task's code

	TaskName  string // the name the task gave itself with SetName, "" if none
	StartedBy string // what started it: "Go", "TaskGroup.Go", "GoIn", "First", ...; "Run" for main
}

// Error starts with "weft: deadlock: " and lists every blocked task on a
// line of its own (it does not suspend):
//
//	task 3 "fetch" example.com/app.fetch, started by TaskGroup.Go at app.go:30, waiting in Chan.Recv at app.go:12
func (e *DeadlockError) Error() string {
	var b strings.Builder
	if e.MainBlocked {
		b.WriteString("weft: deadlock: main is waiting on a promise nothing can resolve")
	} else {
		fmt.Fprintf(&b, "weft: deadlock: main returned, but %d task(s) wait on promises nothing can resolve", len(e.Blocked))
	}
	for _, t := range e.Blocked {
		b.WriteString("\n\t")
		b.WriteString(t.Name)
		if t.TaskName != "" && t.TaskName != t.Name {
			fmt.Fprintf(&b, " %q", t.TaskName)
		}
		fmt.Fprintf(&b, " %s, started", t.Func)
		if t.StartedBy != "" && t.StartedBy != "Go" && t.StartedBy != "Run" {
			fmt.Fprintf(&b, " by %s", t.StartedBy)
		}
		fmt.Fprintf(&b, " at %s, waiting in %s at %s", t.Started, t.Op, t.Waiting)
	}
	return b.String()
}

var (
	// ErrNestedRun is returned by Run when it is called from inside a task:
	// a task must not block its loop by running another one. Start a child
	// with Go instead.
	ErrNestedRun = errors.New("weft: Run called from inside a task; use Go to start a child task")

	errAborted     = errors.New("weft: Run is unwinding after runtime.Goexit in a task")
	errBadInterval = errors.New("weft: WithSwitchInterval: the interval must be positive")
	errGoexit      = errors.New("weft: task called runtime.Goexit")
)

func (rs *runState) isDeadlockErr(err error) bool {
	dl := rs.deadlock.Load()
	if dl == nil {
		return errors.Is(err, errAborted)
	}
	var d *DeadlockError
	return (errors.As(err, &d) && d == dl) || errors.Is(err, errAborted)
}

func funcPC(f any) uintptr { return reflect.ValueOf(f).Pointer() }

// funcNameOf names the function at pc, for reports.
func funcNameOf(pc uintptr) string {
	if f := runtime.FuncForPC(pc); f != nil {
		return f.Name()
	}
	return "?"
}

// pcSite renders a call-site PC (a return address) as file:line.
func pcSite(pc uintptr) string {
	if pc == 0 {
		return "?"
	}
	fr, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	return fmt.Sprintf("%s:%d", fr.File, fr.Line)
}

// userSite returns file:line of the first frame in pcs that is not inside
// weft itself (nor the runtime): where the user's code made the call.
func userSite(pcs []uintptr) string {
	frames := runtime.CallersFrames(pcs)
	for {
		fr, more := frames.Next()
		if fr.PC != 0 && !isInternalFunc(fr.Function) {
			return fmt.Sprintf("%s:%d", fr.File, fr.Line)
		}
		if !more {
			return "?"
		}
	}
}

func isInternalFunc(name string) bool {
	return strings.HasPrefix(name, "github.com/weft-go/weft.") ||
		strings.HasPrefix(name, "github.com/weft-go/weft/internal/") ||
		strings.HasPrefix(name, "runtime.")
}

// shortFuncName drops the import path from a function name:
// "github.com/x/y.f.func1" becomes "y.f.func1".
func shortFuncName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}
