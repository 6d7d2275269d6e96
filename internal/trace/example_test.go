package trace_test

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/weft-go/weft/internal/trace"
)

// A loop records a main task that starts a child, which runs first; the
// stream is a complete trace once closed. Each slice is one X event,
// written when it ends; the events inside it follow it. Times are nanoseconds on the
// loop's clock (here made up, as a virtual clock would give them).
func ExampleNewStream() {
	var out bytes.Buffer
	r := trace.NewStream(&out)
	b := r.NewBuffer(1, 0) // run 1, loop 0
	b.Spawn(0, 0, 1, 0)
	b.SetName(0, 1, "main")
	b.Resume(0, 1)
	b.Spawn(1000, 1, 2, 0)
	b.SetName(1000, 2, "child")
	b.Suspend(1500, 1, trace.Spawned)
	b.Resume(1500, 2)
	b.Suspend(2500, 2, trace.Finished)
	b.Resume(2500, 1)
	b.Suspend(3000, 1, trace.Finished)
	if err := r.Close(); err != nil {
		fmt.Println(err)
	}
	fmt.Println("valid:", trace.Validate(out.Bytes()) == nil)
	fmt.Print(out.String())
	// Output:
	// valid: true
	// {"traceEvents":[
	// {"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"weft run 1"}},
	// {"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"loop 0"}},
	// {"name":"thread_sort_index","ph":"M","pid":1,"tid":1,"args":{"sort_index":1}},
	// {"name":"name","cat":"task","ph":"i","s":"t","ts":0,"pid":1,"tid":1,"args":{"task":1,"name":"main"}},
	// {"name":"main","cat":"task","ph":"X","ts":0,"pid":1,"tid":1,"dur":1.5,"args":{"task":1,"reason":"spawn"}},
	// {"name":"spawn","cat":"flow","ph":"s","ts":1,"pid":1,"tid":1,"id":1},
	// {"name":"name","cat":"task","ph":"i","s":"t","ts":1,"pid":1,"tid":1,"args":{"task":2,"name":"child"}},
	// {"name":"child","cat":"task","ph":"X","ts":1.5,"pid":1,"tid":1,"dur":1,"args":{"task":2,"reason":"finished"}},
	// {"name":"spawn","cat":"flow","ph":"f","bp":"e","ts":1.5,"pid":1,"tid":1,"id":1},
	// {"name":"main","cat":"task","ph":"X","ts":2.5,"pid":1,"tid":1,"dur":0.5,"args":{"task":1,"reason":"finished"}}
	// ],"displayTimeUnit":"ns"}
}

// A ring keeps the recent past; a snapshot of the last 10 µs of a task
// that yields every microsecond holds the last ten slices and the one cut
// at the snapshot's start.
func ExampleRecorder_WriteSnapshot() {
	r := trace.NewRing(time.Minute, 1<<20)
	b := r.NewBuffer(1, 0)
	b.Spawn(0, 0, 7, 0)
	b.SetName(0, 7, "spinner")
	for i := range int64(100) {
		b.Resume(i*1000, 7)
		b.Suspend(i*1000+500, 7, trace.Yield)
	}
	b.Publish() // as the loop does before it blocks
	var out bytes.Buffer
	if err := r.WriteSnapshot(&out, 10*time.Microsecond); err != nil {
		fmt.Println(err)
	}
	fmt.Println("valid:", trace.Validate(out.Bytes()) == nil)
	fmt.Println("slices:", strings.Count(out.String(), `"cat":"task","ph":"X"`))
	fmt.Println("first:", strings.Contains(out.String(), `"name":"spinner","cat":"task","ph":"X","ts":89.5,`))
	// Output:
	// valid: true
	// slices: 11
	// first: true
}
