package weft

// Statistics: counters the loops keep as they go (observe.go) and the task
// states of the registry, read without the loops.

import (
	"time"
)

// Stats is a snapshot of a Run: its totals, then the same figures per
// loop, and its pool of off-loop workers. See RunStats.
type Stats struct {
	Run        int     // the Run's number, from 1 for the process's first Run
	Loops      int     // loops in the Run
	Backend    Backend // the backend the loops run: epoll, io_uring or portable (see WithBackend)
	LoopCounts         // totals over the loops
	PerLoop    []LoopStats

	// The Offload pool (the Run's, shared by its loops).
	OffloadQueued  int // jobs waiting for a worker
	OffloadBusy    int // workers running a job
	OffloadWorkers int // workers started and not ended
}

// LoopStats is one loop's part of a Stats.
type LoopStats struct {
	Loop int // its index, 0 to Loops-1
	LoopCounts
}

// LoopCounts are the figures of a loop, or their sums over the loops.
type LoopCounts struct {
	Spawned  uint64 // tasks started, since the Run began
	Live     int    // tasks started and not finished, now
	Running  int    // tasks running now (0 or 1 per loop)
	Runnable int    // tasks queued to run
	Waiting  WaitingCounts

	Switches    uint64        // task resumptions
	Polls       uint64        // looks at the kernel for ready fds (sleeps included)
	PollTime    time.Duration // ... the time spent in them (a loop asleep is in one)
	TimersFired uint64        // timers that came due (sleeps, deadlines, callbacks)
	InboxPosts  uint64        // messages from other goroutines and loops (remote wakes, completions, cancellations)
	HandedOver  uint64        // tasks this loop took from others (the balancer's steals)
}

// WaitingCounts are the waiting tasks by what they wait on.
type WaitingCounts struct {
	Promise int // Await, All, Race, joins
	Channel int // weft channels, Select
	Lock    int // Mutex, Semaphore
	Event   int // Event and other wait sources
	Timer   int // Sleep
	FD      int // an fd to be ready
	Offload int // off-loop work
}

// RunStats returns a snapshot of the statistics of t's Run. The task
// states (live, running, runnable, waiting) come from one pass over the
// Run's tasks under the registry's lock, so they add up; the counters are
// each exact at a moment during the call. It does not suspend and is not
// a cancellation point; it costs about 50 ns per live task.
//
// To publish a Run's figures with expvar, one call does it:
//
//	expvar.Publish("weft", expvar.Func(func() any { return weft.AllStats() }))
func RunStats(t *Task) Stats {
	t.check("RunStats")
	return t.rs.stats()
}

// AllStats returns the statistics of every running Run, in start order.
// It does not suspend: any goroutine may call it, and it never waits for a
// loop.
func AllStats() []Stats {
	var all []Stats
	for _, rs := range runningRuns() {
		all = append(all, rs.stats())
	}
	return all
}

// offloadStatser is the Run's offload pool, as Stats sees it.
type offloadStatser interface {
	stats() (queued, busy, workers int)
}

func (p *offloadPool) stats() (queued, busy, workers int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.jobs.len(), p.workers - p.idle, p.workers
}

// stats takes the snapshot of RunStats.
func (rs *runState) stats() Stats {
	snap := rs.snapshot()
	s := Stats{Run: rs.obs.num, Loops: len(rs.loops), PerLoop: make([]LoopStats, len(rs.loops)), Backend: rs.loops[0].backendName()}
	for i, l := range rs.loops {
		c := &s.PerLoop[i].LoopCounts
		s.PerLoop[i].Loop = i
		c.Spawned = l.obs.spawned.Load()
		c.Switches = l.obs.switches()
		c.Polls = l.obs.polls.Load()
		c.PollTime = time.Duration(l.obs.pollNs.Load())
		c.TimersFired = l.obs.fired.Load()
		c.InboxPosts = l.obs.posts.Load()
		c.HandedOver = l.obs.received.Load()
	}
	for i := range snap.tasks {
		ts := &snap.tasks[i]
		c := &s.PerLoop[ts.loop].LoopCounts
		c.Live++
		switch ts.state {
		case viewRunning:
			c.Running++
		case viewRunnable:
			c.Runnable++
		case viewWaiting:
			w := &c.Waiting
			switch ts.rec.kind {
			case waitPromise, waitMulti:
				w.Promise++
			case waitTimer:
				w.Timer++
			case waitFD:
				w.FD++
			case waitExternal:
				w.Offload++
			case waitPark:
				switch describeWait(snap, &ts.rec)[:4] {
				case "chan":
					w.Channel++
				case "lock":
					w.Lock++
				default:
					w.Event++
				}
			}
		}
	}
	for _, ls := range s.PerLoop {
		s.LoopCounts.add(&ls.LoopCounts)
	}
	if p, ok := rs.obs.offload.Load().(offloadStatser); ok {
		s.OffloadQueued, s.OffloadBusy, s.OffloadWorkers = p.stats()
	}
	return s
}

func (c *LoopCounts) add(o *LoopCounts) {
	c.Spawned += o.Spawned
	c.Live += o.Live
	c.Running += o.Running
	c.Runnable += o.Runnable
	c.Waiting.Promise += o.Waiting.Promise
	c.Waiting.Channel += o.Waiting.Channel
	c.Waiting.Lock += o.Waiting.Lock
	c.Waiting.Event += o.Waiting.Event
	c.Waiting.Timer += o.Waiting.Timer
	c.Waiting.FD += o.Waiting.FD
	c.Waiting.Offload += o.Waiting.Offload
	c.Switches += o.Switches
	c.Polls += o.Polls
	c.PollTime += o.PollTime
	c.TimersFired += o.TimersFired
	c.InboxPosts += o.InboxPosts
	c.HandedOver += o.HandedOver
}
