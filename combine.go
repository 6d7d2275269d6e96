package weft

import (
	"errors"
	"fmt"
)

// All waits for every promise and returns their values in the promises'
// order, suspending the task while promises are pending; if one fails, it
// returns that failure at once. It is a cancellation point: if the task
// has been cancelled (or its deadline has passed), All returns the cause
// (matching context.Canceled), whether or not the promises have settled.
//
// All cancels nothing: after a failure the other promises' tasks run on.
// If several fail, All returns the first in completion order; promises
// that had settled before All was called count as completed first, in
// argument order.
func All[T any](t *Task, ps ...*Promise[T]) ([]T, error) {
	t.check("All")
	cores := promiseCores("All", ps)
	if err := t.cancelPoint(); err != nil {
		return nil, err
	}
	var failed = -1
	err := t.waitEach(cores, "All", func(i int) bool {
		if cores[i].phase() == rejected {
			failed = i
			return true
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	if failed >= 0 {
		_, err := ps[failed].result()
		return nil, err
	}
	vals := make([]T, len(ps))
	for i, p := range ps {
		vals[i] = p.val
	}
	return vals, nil
}

// Race returns the result, value and error, of the first promise to
// settle, suspending the task while all are pending. It is a cancellation
// point: if the task has been cancelled (or its deadline has passed), Race
// returns the cause (matching context.Canceled).
//
// Promises already settled when Race is called win in argument order. The
// others are left running: Race does not cancel them (First does). Race
// of no promises returns an error.
func Race[T any](t *Task, ps ...*Promise[T]) (T, error) {
	t.check("Race")
	var zero T
	if len(ps) == 0 {
		return zero, errRaceOfNone
	}
	cores := promiseCores("Race", ps)
	if err := t.cancelPoint(); err != nil {
		return zero, err
	}
	winner := -1
	if err := t.waitEach(cores, "Race", func(i int) bool { winner = i; return true }); err != nil {
		return zero, err
	}
	return ps[winner].result()
}

var errRaceOfNone = errors.New("weft: Race of no promises would never settle")

func promiseCores[T any](op string, ps []*Promise[T]) []*promise {
	cores := make([]*promise, len(ps))
	for i, p := range ps {
		if p == nil {
			panic(fmt.Sprintf("weft: %s: promise %d is nil", op, i))
		}
		cores[i] = &p.p
	}
	return cores
}

// waitEach calls visit(i) for each promise as it is found settled, in
// completion order (those settled already first, in argument order), until
// visit returns true or all are visited. It suspends while it waits.
func (t *Task) waitEach(ps []*promise, op string, visit func(i int) bool) error {
	var pendingIdx []int
	for i, p := range ps {
		if p.settled() {
			if visit(i) {
				return nil
			}
		} else {
			pendingIdx = append(pendingIdx, i)
		}
	}
	if len(pendingIdx) == 0 {
		return nil
	}
	if err := t.promiseWaitAllowed(); err != nil {
		return err
	}
	ws := t.waitState()
	ws.firedList = ws.firedList[:0]
	ws.multi = ws.multi[:0]
	nodes := make([]waiter, len(pendingIdx))
	t.pin++ // registrations stay on this loop between the waits below
	for k, i := range pendingIdx {
		w := &nodes[k]
		w.task, w.index, w.loop, w.multi = t, i, t.loop, true
		ws.multi = append(ws.multi, w)
		if !ps[i].register(w) {
			ws.fire(w) // settled since the first pass: it completed now
		}
	}
	defer func() {
		for _, w := range ws.multi {
			w.retire()
		}
		ws.multi = ws.multi[:0]
		ws.firedList = ws.firedList[:0]
		t.pin--
	}()
	seen := 0
	for {
		for ; seen < len(ws.firedList); seen++ {
			if visit(ws.firedList[seen].index) {
				return nil
			}
		}
		if seen == len(ws.multi) {
			return nil
		}
		t.newWait()
		t.noteWaitSite(waitMulti, op)
		if err := t.block(waitMulti); err != nil {
			return err
		}
	}
}
