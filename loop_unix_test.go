//go:build unix

package weft_test

import (
	"golang.org/x/sys/unix"
	"io"
	"net"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/echo"
)

func TestIdleLoopUsesNoCPU(t *testing.T) {
	if raceEnabled {
		t.Skip("CPU accounting is meaningless under the race detector")
	}
	var before, after unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &before)
	run(t, func(wt *weft.Task) { wt.Sleep(400 * time.Millisecond) })
	unix.Getrusage(unix.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	if cpu > 60*time.Millisecond {
		t.Fatalf("a 400 ms sleep cost %v of CPU", cpu)
	}
}

// Coroutines are reused across loops: a connection's task ends on its
// descriptor's loop, not on the loop that accepted it and made its
// coroutine, and the loops share idle coroutines through the Run's pool.
// (Each loop once kept its own: the accepting loop made a goroutine for
// every connection while the others' pools filled with those that ended
// there.) Counted with the runtime's count of goroutines created.
func TestCoroutinesAreReusedAcrossLoops(t *testing.T) {
	if name := weft.BackendName(); name != "epoll" && name != "io_uring" {
		t.Skipf("the %s backend starts goroutines of its own for each connection", name)
	}
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	created := func() uint64 {
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			t.Skip("no /sched/goroutines-created in this Go")
		}
		return s[0].Value.Uint64()
	}
	const warm, conns = 3000, 4000
	var made uint64
	run(t, func(wt *weft.Task) {
		ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		server := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, echo.Serve(wt, ln) })
		done := make(chan error, 1)
		go func() {
			defer ln.Close()
			done <- func() error {
				var from uint64
				for i := 0; i < warm+conns; i++ {
					if i == warm {
						from = created()
					}
					c, err := net.Dial("tcp", ln.Addr().String())
					if err != nil {
						return err
					}
					b := []byte{1}
					if _, err := c.Write(b); err != nil {
						return err
					}
					if _, err := io.ReadFull(c, b); err != nil {
						return err
					}
					c.Close()
				}
				made = created() - from
				return nil
			}()
		}()
		if _, err := server.Await(wt); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}, weft.WithLoops(2))
	t.Logf("%d goroutines created for %d connections after %d", made, conns, warm)
	if made > conns/16 {
		t.Fatalf("%d goroutines created for %d connections, one after another: the loops' coroutines are not reused", made, conns)
	}
}
