package weft

import (
	"errors"
	"slices"
	"testing"
)

func TestFinishHooksRunNewestFirstWhenTheTaskReturns(t *testing.T) {
	var order []string
	Run(func(main *Task) (struct{}, error) {
		p := Go(main, func(c *Task) (struct{}, error) {
			for _, name := range []string{"a", "b", "c"} {
				c.onFinish(&finishHook{fn: func() { order = append(order, name) }})
			}
			order = append(order, "returning")
			return struct{}{}, c.Yield()
		})
		p.Await(main)
		return struct{}{}, nil
	})
	if want := []string{"returning", "c", "b", "a"}; !slices.Equal(order, want) {
		t.Fatalf("order = %v, want %v", order, want)
	}
}

func TestRemovedFinishHookDoesNotRun(t *testing.T) {
	var ran []string
	Run(func(main *Task) (struct{}, error) {
		p := Go(main, func(c *Task) (struct{}, error) {
			a := &finishHook{fn: func() { ran = append(ran, "a") }}
			b := &finishHook{fn: func() { ran = append(ran, "b") }}
			d := &finishHook{fn: func() { ran = append(ran, "d") }}
			c.onFinish(a)
			c.onFinish(b)
			c.onFinish(d)
			b.remove() // the middle one
			b.remove() // twice is harmless
			d.remove() // the head
			return struct{}{}, nil
		})
		p.Await(main)
		return struct{}{}, nil
	})
	if want := []string{"a"}; !slices.Equal(ran, want) {
		t.Fatalf("ran = %v, want %v", ran, want)
	}
}

func TestFinishHookRunsWhenTheTaskPanics(t *testing.T) {
	ran := false
	_, err := Run(func(main *Task) (struct{}, error) {
		p := Go(main, func(c *Task) (struct{}, error) {
			c.onFinish(&finishHook{fn: func() { ran = true }})
			panic("boom")
		})
		_, err := p.Await(main)
		return struct{}{}, err
	})
	var pe *PanicError
	if !ran || !errors.As(err, &pe) {
		t.Fatalf("hook ran %v; Run = %v", ran, err)
	}
}

func TestFinishHookMayRemoveAnotherThatHasNotRun(t *testing.T) {
	var ran []string
	Run(func(main *Task) (struct{}, error) {
		a := &finishHook{fn: func() { ran = append(ran, "a") }}
		b := &finishHook{fn: func() { ran = append(ran, "b"); a.remove() }}
		main.onFinish(a)
		main.onFinish(b)
		return struct{}{}, nil
	})
	if want := []string{"b"}; !slices.Equal(ran, want) {
		t.Fatalf("ran = %v, want %v", ran, want)
	}
}
