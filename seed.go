package weft

// Seeded schedules (DESIGN.md, "Simulation").
//
// Under WithSeed a Run keeps a simState: one pseudo-random source, seeded
// by the user, takes every choice the runtime would otherwise make by
// arrival order or by math/rand. The hooks into the rest of the core are
// few and local, each a nil check on rs.sim (or l.sim, its copy on the
// loop):
//
//   - popRunnable (sched.go) asks pick which runnable task runs next,
//     instead of taking the head of the interactive lane. The two lanes
//     become one pool: under a seed, fairness is the source's business.
//   - ready (loop.go) notes why a task became runnable (spawned, gave way,
//     woken from a timer, a promise, a park...), for the decision log.
//   - timerHeap.push (timers.go) breaks ties between equal deadlines with a
//     draw from the source instead of insertion order.
//   - chooseRandom and choosePartner (sync_random.go: Select among ready
//     cases, and a partner among a waiting Select's cases on its channel)
//     and Task.Rand (simnet's delays and drops) draw from the same source.
//   - loopCount (loops.go) makes the Run one loop: every step is taken
//     on Run's goroutine, so goroutine timing cannot reorder anything.
//     WithLoops(n > 1) gives n simulated loops instead (pickLoops): each
//     task carries the index of its loop (Task.simLoop), and a step draws
//     the loop, then the task.
//   - the real clock is replaced by a virtual one unless WithVirtualTime
//     chose its start, and real I/O and Offload fail with ErrRealIO unless
//     AllowRealIO.
//
// Every choice is a Decision. Decisions are hashed as they are made (an
// FNV-style multiply and shift over their fields packed in three words;
// not their function names or addresses, which a rebuild may move), so
// that two runs of one program under one seed can be compared by one
// number, and the last ones are kept in a ring for failure reports
// (RunInfo).
//
// Two strategies choose the next task: uniform (each runnable task equally
// likely, at each step) and PCT (Burckhardt et al., "A randomized scheduler
// with probabilistic guarantees of finding bugs", ASPLOS 2010): each task
// gets a random priority when it is spawned, the highest-priority runnable
// task runs, and at depth-1 steps drawn at random from the first
// WithPCT(_, steps) the running task's priority drops below every other.
// A bug that needs d ordering constraints is found with probability at
// least 1/(n*k^(d-1)) per run, where uniform choice can need far more runs
// when the bug needs one task to be preempted at one exact place and
// then starved for a long time.

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/weft-go/weft/internal/clock"
)

// ErrRealIO is returned (wrapped, with the operation's name) by the
// operations that reach outside a seeded Run: Listen, Dial and
// ListenPacket without a Network, Offload (and so ReadFile, WriteFile and
// name resolution). Their completion comes from the kernel or another
// goroutine, at a moment no seed controls, so a run that uses them does not
// replay. AllowRealIO lets them run anyway.
var ErrRealIO = errors.New("weft: real I/O under WithSeed (use a simulated Network, or AllowRealIO)")

// simEpoch is where a seeded Run's virtual clock starts unless
// WithVirtualTime says otherwise.
var simEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// simOptions are the options of a seeded Run.
type simOptions struct {
	seeded   bool // WithSeed was given: the others apply
	seed     uint64
	pctDepth int // 0: uniform choice
	pctSteps int
	realIO   bool
	info     *RunInfo
}

func simOpts(o *options) *simOptions {
	if o.sim == nil {
		o.sim = &simOptions{}
	}
	return o.sim
}

// WithSeed runs the Run under a seeded schedule: one pseudo-random source,
// seeded with seed, chooses which runnable task runs next, the order of
// timers with the same deadline, the case Select takes among ready ones,
// the case a task satisfies among a waiting Select's cases on its channel,
// and every draw of Task.Rand (simnet's delays and losses). The same program
// under the same seed makes the same choices in the same order: the same
// schedule, whose decision log hashes the same (WithRunInfo).
//
// To keep the schedule the seed's alone, a seeded Run
//   - steps all its loops on one goroutine: with WithLoops(n), n > 1, it
//     simulates n loops, and at each step the seed chooses which loop
//     steps (a DecideLoop decision) and which of its runnable tasks runs.
//     A task starts on its spawner's loop, a loop with nothing of its own
//     to run takes a movable task from another (Local tasks never move),
//     and Loop reports the simulated loop. Tasks of different loops are
//     interleaved at suspension points rather than run in parallel, and
//     Stats counts everything under loop 0. WEFT_LOOPS is not read: the
//     environment does not change a seed's schedule;
//   - runs on virtual time, from 2000-01-01 UTC unless WithVirtualTime
//     gives the start;
//   - refuses real I/O and Offload with ErrRealIO unless AllowRealIO.
//
// Without WithSeed nothing changes: one loop's lanes stay FIFO. (The
// WEFT_SEED environment variable is read by package weftest, whose
// Explore then replays that seed; Run itself does not read it.)
func WithSeed(seed uint64) Option {
	return func(o *options) {
		s := simOpts(o)
		s.seeded, s.seed = true, seed
	}
}

// WithPCT makes a seeded Run (WithSeed) choose its tasks by PCT, the
// probabilistic concurrency testing scheduler, instead of uniformly: every
// task gets a random priority, the highest-priority runnable task runs,
// and at depth-1 steps, drawn from the first steps scheduling steps, the
// running task drops to the lowest priority. depth is the number of
// ordering constraints a bug may need (2 or 3 finds most); steps should be
// about the length of a run in steps (RunInfo.Steps). depth < 1 or
// steps < 1 is an error from Run. Without WithSeed it does nothing.
func WithPCT(depth, steps int) Option {
	return func(o *options) {
		if depth < 1 || steps < 1 {
			o.err = errors.New("weft: WithPCT needs depth >= 1 and steps >= 1")
			return
		}
		s := simOpts(o)
		s.pctDepth, s.pctSteps = depth, steps
	}
}

// AllowRealIO lets a seeded Run use real I/O and Offload: their
// completions are waited for (virtual time stands still meanwhile), but
// they come when the kernel or the goroutine scheduler says, so the run may
// not replay from its seed. Without WithSeed it does nothing.
func AllowRealIO() Option {
	return func(o *options) { simOpts(o).realIO = true }
}

// WithRunInfo has a seeded Run fill *info when it ends (also when it
// unwinds after a runtime.Goexit): the seed, the number of decisions, their
// hash and the last of them, or all of them if info.KeepLog is set on
// entry. Without WithSeed, info is left with Seeded false.
func WithRunInfo(info *RunInfo) Option {
	return func(o *options) { simOpts(o).info = info }
}

// RunInfo describes a seeded Run's schedule (WithRunInfo).
type RunInfo struct {
	KeepLog bool // set on entry: keep every decision in Log

	Seeded bool       // the Run was seeded
	Seed   uint64     // its seed
	Steps  int        // the decisions taken
	Hash   uint64     // the hash of all of them, in order
	Last   []Decision // the last decisions (up to 32), oldest first
	Log    []Decision // every decision, if KeepLog
}

// DecisionKind says what a decision chose.
type DecisionKind uint8

const (
	DecideRun     DecisionKind = iota // which runnable task runs next
	DecideSelect                      // which Select case is tried first (of those left)
	DecideRand                        // a draw of Task.Rand
	DecideLoop                        // which simulated loop steps next (WithLoops(n > 1) under a seed)
	DecidePartner                     // which of a waiting Select's cases on one channel an arriving sender or receiver satisfies
)

// Reason says why the task a DecideRun decision picked was runnable.
type Reason uint8

const (
	ReasonGaveWay  Reason = iota // it yielded, spawned a task or was made to give way
	ReasonSpawned                // it is a new task
	ReasonTimer                  // its sleep or timeout fell due (or was interrupted)
	ReasonPromise                // a promise it awaited settled (or it was interrupted)
	ReasonPark                   // a channel, lock, event or simulated I/O woke it
	ReasonFD                     // real I/O woke it
	ReasonExternal               // off-loop work it waited for finished
)

var reasonNames = [...]string{"gave way", "spawned", "timer", "promise", "park", "fd", "external"}

// String returns the reason as a decision log prints it ("gave way",
// "timer", ...). It does not suspend.
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", r)
}

// Decision is one choice of a seeded Run.
type Decision struct {
	Step    int           // 1, 2, ... in the Run
	Kind    DecisionKind  // what was chosen
	Task    uint32        // the task picked to run (DecideRun) or the one choosing
	Reason  Reason        // DecideRun: why the task was runnable
	Options int           // how many there were to choose from (runnable tasks, ready cases, the draw's range)
	Chosen  int           // the index chosen (DecideRand: the low bits of the draw)
	At      time.Duration // virtual time since the Run started
	Name    string        // the name the task has given itself with SetName by the end of the Run ("" if none; not hashed)
	pc      uintptr       // the task's function, for reports (not hashed)
}

// Func returns the name of the function of the decision's task ("" for
// none). It does not suspend.
func (d Decision) Func() string {
	if d.pc == 0 {
		return ""
	}
	return funcNameOf(d.pc)
}

// String describes the decision on one line, as weftest's reports print
// it: the step, the virtual time, the task (id, name, function) and what
// was chosen among how many. It does not suspend.
func (d Decision) String() string {
	name := d.Func()
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	// "task 3 "fetch" (pkg.fetch)": the id, the SetName name, the function.
	who := fmt.Sprintf("task %d", d.Task)
	if d.Name != "" {
		who += fmt.Sprintf(" %q", d.Name)
	}
	who += " (" + name + ")"
	switch d.Kind {
	case DecideSelect:
		return fmt.Sprintf("step %d at %v: %s Select tries case %d of %d first", d.Step, d.At, who, d.Chosen, d.Options)
	case DecideRand:
		return fmt.Sprintf("step %d at %v: %s drew %d", d.Step, d.At, who, d.Chosen)
	case DecidePartner:
		return fmt.Sprintf("step %d at %v: %s satisfies the Select waiting on %d cases of its channel in case %d of them", d.Step, d.At, who, d.Options, d.Chosen)
	case DecideLoop:
		return fmt.Sprintf("step %d at %v: loop %d of %d steps", d.Step, d.At, d.Chosen, d.Options)
	}
	return fmt.Sprintf("step %d at %v: run %s, %s, among %d runnable", d.Step, d.At, who, d.Reason, d.Options)
}

// ringEntry is a decision as the ring keeps it.
type ringEntry struct {
	d Decision
	t *Task
}

// lastKept is how many decisions a RunInfo keeps without KeepLog.
const lastKept = 32

// simState is a seeded Run's scheduler state. It is loop-owned: a seeded
// Run has one loop.
type simState struct {
	opts  simOptions
	loops int // simulated loops: WithLoops's n (1 without it)
	rng   prng
	start int64 // the clock when the Run began
	clock clock.Clock
	step  int
	hash  uint64
	ring  [lastKept]ringEntry
	log   []Decision
	logT  []*Task // with log: the task of each decision, to name it at the end

	// PCT.
	prio      map[*Task]uint64 // a task's priority; higher runs first
	changes   []int            // the steps at which the running task drops, ascending
	low       uint64           // the next low priority given at a change point
	prioSweep int              // sweep prio of finished tasks when it grows past this
	last      *Task            // the task picked last
	streak    int              // picks of last in a row while others were runnable

	// Scratch for pickLoops.
	hasBuf  []bool
	intBuf  []int
	candBuf []int
}

// newSimState makes the state of a seeded Run, or returns nil.
func newSimState(o *options) *simState {
	if !o.seeded() {
		return nil
	}
	s := &simState{opts: *o.sim, hash: fnvOffset, loops: 1}
	if o.loopsSet && !o.loopsEnv { // WEFT_LOOPS is not read: the environment must not change a seed's schedule
		s.loops = o.loops
		if s.loops == 0 {
			s.loops = procsBase()
		}
		s.loops = min(s.loops, maxSimLoops)
	}
	s.rng.seed(o.sim.seed)
	if s.opts.pctDepth > 0 {
		s.prio = map[*Task]uint64{}
		s.prioSweep = 1024
		for range s.opts.pctDepth - 1 {
			s.changes = append(s.changes, 1+s.rng.intn(s.opts.pctSteps))
		}
		sortInts(s.changes)
		s.low = uint64(s.opts.pctDepth)
	}
	if s.opts.info != nil && s.opts.info.KeepLog {
		s.log = make([]Decision, 0, 256)
	}
	return s
}

// seeded reports whether o asks for a seeded Run (WithSeed was given).
func (o *options) seeded() bool { return o.sim != nil && o.sim.seeded }

// simClock returns the clock of a seeded Run.
func simClock(o *options) clock.Clock {
	if o.clock != nil {
		return o.clock
	}
	return clock.NewVirtual(simEpoch)
}

// noteReady records why t becomes runnable; t's state and wait kind are
// still those before.
func (s *simState) noteReady(t *Task) {
	switch t.state {
	case stateNew:
		t.simWhy = uint8(ReasonSpawned)
		if s.prio != nil {
			if _, ok := s.prio[t]; !ok {
				s.prio[t] = uint64(s.opts.pctDepth) + s.rng.next()>>1
			}
		}
	case stateWaiting:
		switch t.waitKind {
		case waitTimer:
			t.simWhy = uint8(ReasonTimer)
		case waitPromise, waitMulti:
			t.simWhy = uint8(ReasonPromise)
		case waitPark:
			t.simWhy = uint8(ReasonPark)
		case waitFD:
			t.simWhy = uint8(ReasonFD)
		case waitExternal:
			t.simWhy = uint8(ReasonExternal)
		}
	default:
		t.simWhy = uint8(ReasonGaveWay)
	}
}

// pick takes the next task to run from l's two lanes, as the strategy
// chooses, and logs the decision.
func (s *simState) pick(l *loop) (*Task, bool) {
	nr, nb := l.runq.len(), l.batchq.len()
	n := nr + nb
	if n == 0 {
		return nil, false
	}
	if s.loops > 1 {
		return s.pickLoops(l, nr, n)
	}
	i := 0
	if s.prio == nil {
		if n > 1 {
			i = s.rng.intn(n)
		}
	} else {
		i = s.pickPCT(l, n, nil)
	}
	return s.take(l, i, nr, n), true
}

// take removes the i-th of l's n runnable tasks (the first nr in the
// interactive lane) and logs the decision that chose it.
func (s *simState) take(l *loop, i, nr, n int) *Task {
	var t *Task
	if i < nr {
		t = l.runq.takeAt(i)
	} else {
		t = l.batchq.takeAt(i - nr)
	}
	if s.prio != nil {
		if t == s.last && n > 1 {
			s.streak++
		} else {
			s.streak = 0
		}
		s.last = t
	}
	s.record(DecideRun, t, Reason(t.simWhy), n, i)
	t.simWhy = uint8(ReasonGaveWay) // unless ready says otherwise next time
	if s.prio != nil && len(s.prio) > s.prioSweep {
		s.sweepPrio()
	}
	return t
}

// maxSimLoops bounds the simulated loops (Task.simLoop is 16 bits).
const maxSimLoops = 1 << 16

// pickLoops is pick with several simulated loops, stepped in turn on the
// Run's one goroutine as the seed chooses. A step first draws the loop
// that steps (a DecideLoop decision): any loop if some runnable task may
// move, else one of the loops that have a runnable task. The loop then
// runs one of its own runnable tasks, chosen as with one loop (uniformly,
// or by PCT priority); a loop with none takes a movable one from another
// loop, as an idle loop is handed work, and the task is on the new loop
// from then on. A task started by Local, or pinned to its loop by
// registrations it holds (see Task.pin), never moves; a task started by
// Go starts on its spawner's loop. Tasks of different loops never run in
// parallel here: a simulated Run explores interleavings at suspension
// points, the only places where a seed can choose.
func (s *simState) pickLoops(l *loop, nr, n int) (*Task, bool) {
	at := func(i int) *Task {
		if i < nr {
			return l.runq.at(i)
		}
		return l.batchq.at(i - nr)
	}
	movable := func(t *Task) bool { return !t.local && t.pin == 0 }
	has := s.hasBuf[:0]
	for range s.loops {
		has = append(has, false)
	}
	s.hasBuf = has
	anyMovable := false
	for i := range n {
		t := at(i)
		has[t.simLoop] = true
		anyMovable = anyMovable || movable(t)
	}
	var k int
	if anyMovable {
		k = s.rng.intn(s.loops)
	} else {
		stepping := s.intBuf[:0]
		for j, h := range has {
			if h {
				stepping = append(stepping, j)
			}
		}
		s.intBuf = stepping
		k = stepping[s.rng.intn(len(stepping))]
	}
	s.record(DecideLoop, nil, 0, s.loops, k)
	own := has[k]
	cand := s.candBuf[:0]
	for i := range n {
		if t := at(i); (own && int(t.simLoop) == k) || (!own && movable(t)) {
			cand = append(cand, i)
		}
	}
	s.candBuf = cand
	j := 0
	if s.prio == nil {
		if len(cand) > 1 {
			j = s.rng.intn(len(cand))
		}
	} else {
		j = s.pickPCT(l, n, cand)
	}
	i := cand[j]
	t := s.take(l, i, nr, n)
	t.simLoop = uint16(k)
	return t, true
}

// sweepPrio forgets the priorities of finished tasks. (The order in which
// a map is walked does not matter here: nothing but deletion happens.)
func (s *simState) sweepPrio() {
	for t := range s.prio {
		if t.state == stateDone {
			delete(s.prio, t)
		}
	}
	s.prioSweep = max(1024, 2*len(s.prio))
}

// pctStarve is how many times in a row PCT lets one task run while others
// are runnable before it demotes it: a task that spins on Yield waiting for
// a lower-priority one would otherwise never let it run.
const pctStarve = 1000

// pickPCT returns the index of the runnable task of highest priority, after
// demoting the last task picked if this step is a change point. With cand,
// it looks only at those indices and returns the position in cand.
func (s *simState) pickPCT(l *loop, n int, cand []int) int {
	next := s.step + 1
	for len(s.changes) > 0 && s.changes[0] <= next {
		s.changes = s.changes[1:]
		if s.last != nil {
			s.low--
			s.prio[s.last] = s.low
		}
	}
	if s.streak >= pctStarve && s.last != nil {
		s.prio[s.last] = 0
		s.streak = 0
	}
	best, bestP := 0, uint64(0)
	nr := l.runq.len()
	if cand != nil {
		n = len(cand)
	}
	for j := range n {
		i := j
		if cand != nil {
			i = cand[j]
		}
		var t *Task
		if i < nr {
			t = l.runq.at(i)
		} else {
			t = l.batchq.at(i - nr)
		}
		p, ok := s.prio[t]
		if !ok { // the main task, or one spawned before the hooks saw it
			p = uint64(s.opts.pctDepth) + s.rng.next()>>1
			s.prio[t] = p
		}
		if j == 0 || p > bestP {
			best, bestP = j, p
		}
	}
	return best
}

// choose returns a draw in [0, n) for a choice of task t, and logs it.
func (s *simState) choose(t *Task, kind DecisionKind, n int) int {
	i := s.rng.intn(n)
	s.record(kind, t, 0, n, i)
	return i
}

// record logs and hashes one decision.
func (s *simState) record(kind DecisionKind, t *Task, why Reason, n, chosen int) {
	s.step++
	at := time.Duration(s.clock.Nanotime() - s.start)
	var id uint32
	if t != nil {
		id = t.id
	}
	h := s.hash
	for _, w := range [...]uint64{uint64(kind) | uint64(why)<<8 | uint64(id)<<32, uint64(n)<<32 | uint64(uint32(chosen)), uint64(at)} {
		h = (h ^ w) * fnvPrime
		h ^= h >> 29
	}
	s.hash = h
	// The ring keeps the task, not its function's name: that is looked up
	// only for a report (decision).
	r := &s.ring[s.step%lastKept]
	r.d = Decision{Step: s.step, Kind: kind, Task: id, Reason: why, Options: n, Chosen: chosen, At: at}
	r.t = t
	if s.log != nil {
		s.log = append(s.log, r.decision())
		s.logT = append(s.logT, t)
	}
}

// decision returns the logged decision, its function and its task's name
// (so far) filled in.
func (r *ringEntry) decision() Decision {
	d := r.d
	if r.t != nil && r.t.job != nil {
		d.pc = r.t.job.funcPC()
		d.Name = r.t.givenName()
	}
	return d
}

// finish fills the RunInfo, if one was asked for.
func (s *simState) finish() {
	info := s.opts.info
	if info == nil {
		return
	}
	info.Seeded, info.Seed, info.Steps, info.Hash = true, s.opts.seed, s.step, s.hash
	info.Last = info.Last[:0]
	for i := max(1, s.step-lastKept+1); i <= s.step; i++ {
		info.Last = append(info.Last, s.ring[i%lastKept].decision())
	}
	for i, t := range s.logT {
		if t != nil {
			s.log[i].Name = t.givenName() // as for Last: the name it has at the end
		}
	}
	info.Log = s.log
}

// checkIO returns an error wrapping ErrRealIO for the operation op of a
// seeded Run that does not allow real I/O, else nil.
func (rs *runState) checkIO(op string) error {
	if s := rs.sim; s != nil && !s.opts.realIO {
		return fmt.Errorf("%s: %w", op, ErrRealIO)
	}
	return nil
}

// Rand returns a pseudo-random number for a choice the task's code makes
// (a simulated network's delay or loss, say). Under WithSeed it is drawn
// from the Run's seeded source and logged as a decision, so a run replays;
// otherwise it comes from math/rand/v2. It does not suspend.
func (t *Task) Rand() uint64 {
	t.check("Rand")
	if s := t.rs.sim; s != nil {
		v := s.rng.next()
		s.record(DecideRand, t, 0, 0, int(v&0xffff))
		return v
	}
	return rand.Uint64()
}

// SimStep returns the number of decisions a seeded Run has taken so far
// (0 without WithSeed): where in the schedule the task is. It does not
// suspend.
func (t *Task) SimStep() int {
	t.check("SimStep")
	if s := t.rs.sim; s != nil {
		return s.step
	}
	return 0
}

// VirtualTime reports whether the task's Run is on virtual time
// (WithVirtualTime, or WithSeed). It does not suspend.
func (t *Task) VirtualTime() bool {
	t.check("VirtualTime")
	return t.rs.clock.Virtual()
}

// Seeded reports whether the task's Run is seeded (WithSeed). It does not
// suspend.
func (t *Task) Seeded() bool {
	t.check("Seeded")
	return t.rs.sim != nil
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// prng is splitmix64 (Steele, Lea, Flood: "Fast splittable pseudorandom
// number generators", 2014): a 64-bit state advanced by a constant, each
// output a mix of it. Small, fast, stable across Go versions (unlike
// math/rand's sources, whose streams this package must not depend on).
type prng struct{ s uint64 }

func (r *prng) seed(seed uint64) { r.s = seed }

func (r *prng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a draw in [0, n), n > 0, by multiplication (Lemire): the
// bias is below n/2^64.
func (r *prng) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// takeAt removes and returns the i-th element (0: the head), moving the
// last one into its place: O(1), and order does not matter under a seed.
func (q *queue[T]) takeAt(i int) T {
	mask := len(q.buf) - 1
	p := (q.head + i) & mask
	last := (q.head + q.size - 1) & mask
	v := q.buf[p]
	q.buf[p] = q.buf[last]
	var zero T
	q.buf[last] = zero
	q.size--
	return v
}

// at returns the i-th element (0: the head).
func (q *queue[T]) at(i int) T { return q.buf[(q.head+i)&(len(q.buf)-1)] }

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
