package weftest

// Fault lists and their shrinking. A test that injects faults (partitions,
// losses, crashes) declares each one to a Plan instead of injecting it
// itself; the Plan injects the faults it keeps. When a seed fails,
// ExploreFaults runs it again without each fault in turn, keeping a fault
// out when the seed still fails without it, until no single fault can go:
// what is left is a small set of faults that still makes the seed fail
// (a local minimum, as delta debugging finds: no fault of it can be
// dropped alone).

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// Plan collects the faults of one run (ExploreFaults).
type Plan struct {
	only  map[int]bool // if not nil, the faults kept (WEFT_FAULTS)
	drop  map[int]bool // the faults left out
	names []string     // every fault declared, in order
	kept  []int        // the indexes of those injected
}

// Add declares fault number len(declared so far): a task started now
// sleeps for at and then, unless the fault is left out, calls do. name
// describes it in reports ("partition n0 from n1"). It does not suspend.
//
// The task is started and sleeps whether or not the fault is left out, so
// that leaving one out changes the schedule only from the moment it would
// have struck: a fault due after the failure can always go.
func (p *Plan) Add(tk *weft.Task, at time.Duration, name string, do func()) {
	i := len(p.names)
	p.names = append(p.names, name)
	out := p.drop[i] || p.only != nil && !p.only[i]
	if !out {
		p.kept = append(p.kept, i)
	}
	weft.Go(tk, func(t *weft.Task) (int, error) {
		if err := t.Sleep(at); err != nil {
			return 0, nil // the run ended first
		}
		if !out {
			do()
		}
		return 0, nil
	})
}

// maxShrinkRuns bounds the runs a shrink may take.
const maxShrinkRuns = 200

// ExploreFaults is Explore for a program that declares its faults to a
// Plan: on failure it runs the seed again without each fault in turn,
// keeping a fault out when the seed still fails without it, until no
// single fault can go, and reports the set it kept, with a replay command
// that injects only those (WEFT_FAULTS lists their indexes). With
// WEFT_SEED set it replays that seed (with the faults WEFT_FAULTS names,
// or all).
func (o Options) ExploreFaults(t *testing.T, seeds int, f func(tk *weft.Task, p *Plan) error) {
	t.Helper()
	if f == nil {
		t.Fatal("weftest: ExploreFaults with a nil function")
	}
	var only map[int]bool
	if s, ok := os.LookupEnv("WEFT_FAULTS"); ok {
		only = map[int]bool{}
		for _, f := range strings.Split(s, ",") {
			if f == "" {
				continue
			}
			i, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("weftest: WEFT_FAULTS=%q: %v", s, err)
			}
			only[i] = true
		}
	}
	var drop map[int]bool // set per run below
	var plan *Plan
	g := func(tk *weft.Task) error {
		plan = &Plan{drop: drop, only: only}
		return f(tk, plan)
	}
	if s, ok := os.LookupEnv("WEFT_SEED"); ok {
		seed, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("weftest: WEFT_SEED=%q is not a seed: %v", s, err)
		}
		o.Replay(t, seed, g)
		return
	}
	if seeds < 1 {
		t.Fatalf("weftest: ExploreFaults with %d seeds", seeds)
	}
	if o.PCTSteps <= 0 && o.Strategy != Uniform {
		o.PCTSteps = o.pctSteps(g)
	}
	for i := range seeds {
		seed := o.First + uint64(i)
		drop = nil
		out := o.Run(seed, g, false)
		if out.Err == nil {
			continue
		}
		all := len(plan.names)
		// Shrink: leave faults out one at a time while the seed fails.
		drop = map[int]bool{}
		kept := append([]int(nil), plan.kept...)
		for changed, runs := true, 0; changed && runs < maxShrinkRuns; {
			changed = false
			for _, k := range kept {
				if runs++; runs > maxShrinkRuns {
					break
				}
				drop[k] = true
				if try := o.Run(seed, g, false); try.Err != nil {
					out, kept, changed = try, append([]int(nil), plan.kept...), true
					break
				}
				delete(drop, k)
			}
		}
		full := o.Run(seed, g, true)
		var b strings.Builder
		b.WriteString(o.Report(t, out, full))
		fmt.Fprintf(&b, "faults: %d of the %d declared still make it fail:\n", len(kept), all)
		sort.Ints(kept)
		idx := make([]string, len(kept))
		for j, k := range kept {
			idx[j] = strconv.Itoa(k)
			fmt.Fprintf(&b, "    %d: %s\n", k, plan.names[k])
		}
		fmt.Fprintf(&b, "replay with only those: WEFT_FAULTS=%s %s", strings.Join(idx, ","), strings.TrimPrefix(replayLine(t, seed), "replay: "))
		t.Errorf("%s", b.String())
		return
	}
}
