package main

import (
	"fmt"
	"strings"
	"time"
)

// variant is one way of putting the echo server and the CPU work together;
// each is a section of the convoy table.
type variant struct {
	key   string // its name for -variants
	title string // its section heading
	short string // its name in the summary, Markdown and the chart
	goals bool   // the goals apply to it (weft's tasks on the loop)
	run   func(k int, interval time.Duration, d driver) (measure, error)
}

// variants are the convoy variants, in the order they run.
var variants = []*variant{
	{
		key: "tasks", short: "weft (tasks)", goals: true,
		title: "weft: echo server and k CPU tasks on one loop (Checkpoint every unit)",
		run: func(k int, interval time.Duration, d driver) (measure, error) {
			return runWeftCase(false, k, interval, d)
		},
	},
	{
		key: "offload", short: "weft (Offload)",
		title: "weft: echo server on the loop, k CPU workers in Offload",
		run: func(k int, interval time.Duration, d driver) (measure, error) {
			return runWeftCase(true, k, interval, d)
		},
	},
	{
		key: "go", short: "Go (GOMAXPROCS=1)",
		title: "Go reference: net echo server (goroutine per connection) and k spinning goroutines, GOMAXPROCS=1",
		run: func(k int, _ time.Duration, d driver) (measure, error) {
			return runGoCase(k, d)
		},
	},
}

// variantKeys lists the variants' names for the usage text.
func variantKeys() string {
	var keys []string
	for _, v := range variants {
		keys = append(keys, v.key)
	}
	return strings.Join(keys, ",")
}

// parseVariants parses the -variants list ("all" or names), keeping the
// variants' own order.
func parseVariants(s string) ([]*variant, error) {
	if strings.TrimSpace(s) == "all" {
		return variants, nil
	}
	want := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		found := false
		for _, v := range variants {
			found = found || v.key == f
		}
		if !found {
			return nil, fmt.Errorf("no variant %q (have %s)", f, variantKeys())
		}
		want[f] = true
	}
	var vs []*variant
	for _, v := range variants {
		if want[v.key] {
			vs = append(vs, v)
		}
	}
	return vs, nil
}

// variantResult is everything measured for one variant.
type variantResult struct {
	v       *variant
	idle    map[int]float64 // k → the CPU workers' units/s with no load
	idleErr map[int]error   // k → why the no-load run failed
	cases   []convoyCase    // by N, then k, ascending
}

// convoyCase is one measured case.
type convoyCase struct {
	conns, k int
	m        measure
	err      error
}

// find returns the case for conns and k, if it was measured without error.
func (vr *variantResult) find(conns, k int) (*convoyCase, bool) {
	for i := range vr.cases {
		c := &vr.cases[i]
		if c.conns == conns && c.k == k && c.err == nil && c.m.load != nil {
			return c, true
		}
	}
	return nil, false
}
