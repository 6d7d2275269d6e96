package weftest

// The failure report (see the package doc): the seed, the error and its
// step, the decisions that led there (runs of the same choice folded, the
// last decision of every task the last lines leave out), and the command
// that replays it; and the step where two runs of a seed diverge, for
// CheckDeterminism.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/weft-go/weft"
)

// Report renders the failure report of out; full is the same seed run
// again with every decision kept.
func (o Options) Report(t *testing.T, out, full Outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "weftest: seed %d failed at step %d of %d (%s): %v\n", out.Seed, out.Step, out.Info.Steps, out.Strategy, out.Err)
	if full.Err == nil || full.Err.Error() != out.Err.Error() || full.Step != out.Step {
		fmt.Fprintf(&b, "weftest: and its second run did not fail the same way (at step %d: %v): the program is not deterministic under its seed (real I/O, goroutines, maps?)\n", full.Step, full.Err)
	}
	n := o.Last
	if n <= 0 {
		n = 20
	}
	log := full.Info.Log
	if out.Step <= len(log) {
		log = log[:out.Step]
	}
	runs := collapse(log)
	if len(runs) > n {
		runs = runs[len(runs)-n:]
	}
	// Main runs weftest's wrapper of f: name f.
	show := func(d weft.Decision) string {
		s := d.String()
		if full.wrapper != "" {
			s = strings.Replace(s, "("+full.wrapper+")", "("+full.user+")", 1)
		}
		return s
	}
	b.WriteString("the last decisions before it:\n")
	shown := map[uint32]bool{}
	for _, r := range runs {
		fmt.Fprintf(&b, "    %s\n", show(r.first))
		if r.n > 1 {
			fmt.Fprintf(&b, "    ... and %d more like it, to step %d at %v\n", r.n-1, r.last.Step, r.last.At)
		}
		shown[r.first.Task] = true
	}
	if others := lastOfOthers(log, shown); len(others) > 0 {
		b.WriteString("the last decision of each other task, before those:\n")
		for _, d := range others {
			fmt.Fprintf(&b, "    %s\n", show(d))
		}
	}
	b.WriteString(replayLine(t, out.Seed))
	return b.String()
}

// decisionRun is a run of decisions that differ only in their step and
// time (a busy task picked again and again), shown as one line and a count.
type decisionRun struct {
	first, last weft.Decision
	n           int // decisions in the run, weft.DecideLoop ones inside it excepted
}

// sameChoice reports whether two decisions made the same choice for the
// same task, but for their step and time.
func sameChoice(a, b weft.Decision) bool {
	return a.Kind == b.Kind && a.Task == b.Task && a.Reason == b.Reason &&
		a.Options == b.Options && a.Chosen == b.Chosen && a.Name == b.Name && a.Func() == b.Func()
}

// collapse folds runs of the same choice into one line each, so that a
// task that yields a thousand times in a row does not fill the report.
// The loop decisions of several simulated loops between two decisions of
// one run are folded into it.
func collapse(log []weft.Decision) []decisionRun {
	var runs []decisionRun
	var loops []weft.Decision // loop decisions since the last other one
	for _, d := range log {
		if d.Kind == weft.DecideLoop {
			loops = append(loops, d)
			continue
		}
		if k := len(runs) - 1; k >= 0 && sameChoice(runs[k].last, d) {
			runs[k].last = d
			runs[k].n++
			loops = loops[:0]
			continue
		}
		for _, l := range loops {
			runs = append(runs, decisionRun{first: l, last: l, n: 1})
		}
		loops = loops[:0]
		runs = append(runs, decisionRun{first: d, last: d, n: 1})
	}
	for _, l := range loops {
		runs = append(runs, decisionRun{first: l, last: l, n: 1})
	}
	return runs
}

// lastOfOthers returns the last decision of each task of log that shown
// does not hold, in step order: the tasks a busy one pushed out of the
// report's last lines.
func lastOfOthers(log []weft.Decision, shown map[uint32]bool) []weft.Decision {
	seen := map[uint32]bool{}
	var others []weft.Decision
	for i := len(log) - 1; i >= 0; i-- {
		d := log[i]
		if d.Kind == weft.DecideLoop || shown[d.Task] || seen[d.Task] {
			continue
		}
		seen[d.Task] = true
		others = append(others, d)
	}
	slices.Reverse(others)
	return others
}

// diverge returns the first step where two decision logs differ.
func diverge(a, b []weft.Decision) (int, string, string, bool) {
	for i := range max(len(a), len(b)) {
		switch {
		case i >= len(a):
			return i + 1, "(the run had ended)", b[i].String(), true
		case i >= len(b):
			return i + 1, a[i].String(), "(the run had ended)", true
		case a[i] != b[i]:
			return i + 1, a[i].String(), b[i].String(), true
		}
	}
	return 0, "", "", false
}

// replayLine is the command that replays seed in this test.
func replayLine(t *testing.T, seed uint64) string {
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return fmt.Sprintf("replay: WEFT_SEED=%d go test -run '%s' %s\n", seed, strings.Join(parts, "/"), pkgDir())
}

// pkgDir returns the package being tested as a path from its module's
// root ("./simnet"), or "." when that cannot be told.
func pkgDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
}
