package trace

import "sync/atomic"

// Reason says why a task's slice on its loop ended.
type Reason uint8

// The reasons a slice ends. The zero Reason is not one of them; a slice
// ended with it is shown as "?".
const (
	Yield        Reason = iota + 1 // the task gave way and stays runnable (Yield)
	Spawned                        // the task started a child, which runs first (Go)
	WaitPromise                    // the task waits for a promise (Await, All, Race, joins)
	WaitTimer                      // the task sleeps until a deadline
	WaitFD                         // the task waits for an fd to be ready
	WaitChannel                    // the task waits on a channel of the runtime
	WaitExternal                   // the task waits for off-loop work (Offload, a helper goroutine)
	Finished                       // the task's function returned (or panicked)
	Preempted                      // the task was made to give way at a Checkpoint
	Budget                         // the task used its budget of ready results
	numReasons

	running = numReasons // the encoder's: a slice still open when the trace ends
)

var reasonNames = [numReasons + 1]string{
	0:            "?",
	Yield:        "yield",
	Spawned:      "spawn",
	WaitPromise:  "wait promise",
	WaitTimer:    "wait timer",
	WaitFD:       "wait fd",
	WaitChannel:  "wait channel",
	WaitExternal: "wait external",
	Finished:     "finished",
	Preempted:    "preempted",
	Budget:       "budget",
	running:      "running",
}

// String returns the reason as the trace shows it: "yield", "wait fd".
func (r Reason) String() string {
	if r >= numReasons {
		return "?"
	}
	return reasonNames[r]
}

// Source is what, on the loop itself rather than in a task, woke a task.
type Source uint8

// The loop's own sources of wakes.
const (
	FromTimer    Source = iota + 1 // a deadline passed (see Buffer.TimerFired)
	FromFD                         // the kernel reported an fd ready
	FromInbox                      // a message from another goroutine (a remote settle, a cancellation)
	FromOffload                    // off-loop work finished
	FromDeadlock                   // the loop found a deadlock and woke the blocked tasks with it
	numSources
)

var sourceNames = [numSources]string{
	0:            "wake",
	FromTimer:    "timer",
	FromFD:       "fd ready",
	FromInbox:    "inbox",
	FromOffload:  "offload done",
	FromDeadlock: "deadlock",
}

// String returns the source as the trace shows it: "timer", "fd ready".
func (s Source) String() string {
	if s >= numSources {
		return "wake"
	}
	return sourceNames[s]
}

// kind is what a record says happened.
type kind uint8

const (
	kResume  kind = iota + 1 // a: task
	kSuspend                 // a: task; x: Reason
	kSpawn                   // a: parent (0: none); b: child; arg: the child's function PC
	kName                    // a: task; x: index+1 of the name in the chunk's strings
	kWake                    // a: the waking task; b: the woken one
	kWakeBy                  // b: the woken task (0: none); x: Source
	kPoll                    // ts: start; arg: duration; a: events
	kSteal                   // a: victim loop; b: tasks taken
	kOffload                 // ts: start; arg: duration; a: task; b: lane
)

// record is one event, fixed-size so that appending one is a few stores.
// Which fields mean what depends on kind (see the kind constants).
type record struct {
	ts   int64  // ns on the loop's clock
	arg  uint64 // kind-specific
	a, b uint32 // kind-specific: task ids, a loop, a count
	kind kind
	x    uint8 // kind-specific: a Reason, a Source, a string index
}

// Chunk geometry. A chunk is about 33 KB: big enough that handing one off
// (a lock or a channel send) is rare, small enough that a ring can drop
// history in fine steps.
const (
	chunkRecords = 1024
	chunkStrings = 32 // names set per chunk; a chunk with no room left is handed off early
)

// chunk is a run of records from one buffer. While it is a buffer's
// current chunk, only the goroutine running that buffer's loop writes it;
// once handed off, nobody writes it until it is recycled, which the sinks
// do only when no reader holds it.
type chunk struct {
	recs [chunkRecords]record
	n    int // records written; the writer's own count
	// pub is n as last published to ring snapshots (ring mode only, every
	// few records and at Publish): records below pub are complete and are
	// never written again while the chunk is in use, so a reader that
	// loads pub may read them.
	pub  atomic.Int32
	strs [chunkStrings]string // names referenced by kName records
	ns   int                  // strings used
	src  *Buffer              // the buffer that wrote it
}

// reset makes c empty for reuse, letting go of its strings.
func (c *chunk) reset() {
	c.n, c.ns, c.src = 0, 0, nil
	c.pub.Store(0)
	clear(c.strs[:])
}

// last returns the timestamp of c's last record, or min if c is empty.
func (c *chunk) last() int64 {
	if c.n == 0 {
		return minTime
	}
	return c.recs[c.n-1].ts
}

// minTime stands for "before any timestamp".
const minTime = -1 << 63
