// Package trace records what weft's loops do and writes it as a Chrome
// trace-event JSON document, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open as it is; RenderSVG draws one as a timeline.
//
// The model. A Recorder belongs to a run (or to several: each buffer says
// its run) and has one Buffer per loop. An event is a record: 32 bytes
// (a timestamp, a kind, two 32-bit ids and a 64-bit argument), appended
// to the buffer's current chunk of 1024 records by the loop that owns the
// buffer. Timestamps are nanoseconds on the loop's clock, read by the
// caller, so under a virtual clock the trace is in virtual time. Strings
// (task names) are kept in the chunk once, when set; a task's function is
// recorded as a PC and named only when the trace is written.
//
// Invariants:
//
//  1. A Buffer is written only by the goroutine running its loop at that
//     moment; it takes no lock and allocates nothing per record.
//  2. A chunk is written only while it is a buffer's current chunk. When
//     it fills (or the buffer is flushed or closed) the buffer hands it to
//     the Recorder's sink and takes an empty one from the free list, under
//     the Recorder's lock, once per 1024 records: the only synchronisation
//     on the recording side.
//  3. A handed-off chunk is read by the sink and written again only after
//     it is recycled, which happens when no reader holds it.
//  4. The sinks: a stream (NewStream) sends chunks to its writer goroutine,
//     which encodes them as they come and recycles them; a loop that gets
//     more than 32 chunks (about 1 MB) ahead of it waits. A ring (NewRing)
//     keeps handed-off chunks in a locked list, dropping the oldest beyond
//     its window or its memory bound; in ring mode the records are also
//     published by an atomic store of the chunk's count (every 16 records,
//     and at Publish), so that WriteSnapshot, from any goroutine, reads
//     the loops' current chunks up to their last published record without
//     stopping them.
//  5. Output depends only on the records and the order chunks reach the
//     sink (a snapshot merges them by time): no map is ranged over to
//     write, no clock is read, so identical records give identical bytes.
//
// How the runtime records (b is the loop's *Buffer, nil when tracing is
// off; ts is the loop clock's Nanotime; ids are task ids):
//
//	Run, for main          b.Spawn(ts, 0, main, fnPC); b.SetName(ts, main, "main")
//	Go                     b.Spawn(ts, parent, child, fnPC), then the parent's
//	                       b.Suspend(ts, parent, Spawned)
//	resume (and begin)     b.Resume(ts, t)
//	suspend, by cause      b.Suspend(ts, t, Yield / WaitPromise / WaitTimer /
//	                       WaitFD / WaitChannel / WaitExternal / Preempted /
//	                       Budget); a task's end: Finished
//	ready, from a task     b.Wake(ts, running, woken) (a settle, a cancel)
//	ready, from the loop   b.TimerFired(ts, t) in fireTimers (t 0 for a
//	                       callback); b.WakeBy(ts, FromFD / FromInbox /
//	                       FromOffload / FromDeadlock, t)
//	pollKernel             b.Poll(start, end, len(events)), after it returns
//	a steal                b.Steal(ts, victim, n), on the thief's loop
//	Offload                lane := lanes.Take() at submit; the worker reads the
//	                       clock at its start and end; when the result comes
//	                       in, b.Offload(start, end, t, lane); lanes.Put(lane)
//	SetName                b.SetName(ts, t, name)
//	before blocking        b.Publish() (for a ring's snapshots)
//	the loop ends          b.Close(); Run's Recorder.Close() after the loops
//
// Costs (BenchmarkRecord, BenchmarkEncodeSwitches, on the 2-core VM weft
// is measured on): recording an event costs about 8 ns, into a stream or
// a ring, and never allocates; the caller's clock read (about 20 ns here)
// usually costs more, so a switch should read the clock once for the
// Suspend and the Resume that follows. A stream's writer formats about
// 40-60 ns a record on its own goroutine, so a loop that records faster
// than that for long waits for it. With tracing off the core holds a nil
// *Buffer and tests it before reading the clock: one predictable branch
// per event site.
package trace
