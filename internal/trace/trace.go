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
//     more than streamBacklog chunks ahead of it waits. A ring (NewRing)
//     keeps handed-off chunks in a locked list, dropping the oldest beyond
//     its window or its memory bound; in ring mode each record is also
//     published by an atomic store of the chunk's count, so that
//     WriteSnapshot, from any goroutine, reads the loops' current chunks
//     up to their last complete record without stopping them.
//  5. Output depends only on the records and the order chunks reach the
//     sink (a snapshot merges them by time): no map is ranged over to
//     write, no clock is read, so identical records give identical bytes.
//
// Costs: recording an event is a few nanoseconds and never allocates
// (BenchmarkRecord); the caller's clock read usually costs more. With
// tracing off, the core holds a nil *Buffer and tests it before reading the
// clock, so an off trace costs one predictable branch per event site.
package trace
