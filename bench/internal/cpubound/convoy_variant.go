package cpubound

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
			return runWeftCase(false, 1, k, interval, d)
		},
	},
	{
		key: "tasks2", short: "weft (tasks, 2 loops)",
		title: "weft: echo server and k CPU tasks on two loops (Checkpoint every unit; idle loops take tasks)",
		run: func(k int, interval time.Duration, d driver) (measure, error) {
			return runWeftCase(false, 2, k, interval, d)
		},
	},
	{
		key: "offload", short: "weft (Offload)",
		title: "weft: echo server on the loop, k CPU workers in Offload",
		run: func(k int, interval time.Duration, d driver) (measure, error) {
			return runWeftCase(true, 1, k, interval, d)
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
	v     *variant
	idle  map[int][]repResult // k → the no-load runs of the CPU workers, one per repetition
	cases []convoyCase        // by N, then k, ascending
}

// convoyCase is one case (N and k) and its repetitions.
type convoyCase struct {
	conns, k int
	reps     []repResult // one per repetition, in order
}

// repResult is one repetition of a case or of a no-load run.
type repResult struct {
	m   measure
	err error
}

// ok reports whether the repetition succeeded (with a load report if it
// ran under load).
func (r repResult) ok(loaded bool) bool {
	return r.err == nil && (!loaded || r.m.load != nil)
}
