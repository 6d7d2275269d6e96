package cpubound

import (
	"context"
	"net"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/weft-go/weft/internal/echo"
)

// runGoCase runs one case of the Go reference: a goroutine-per-connection
// echo server on the net package (echo.ServeNet) and k goroutines spinning
// units, all with GOMAXPROCS set to 1 for the case, while drive applies the
// load. When drive returns, the spinners are told to stop, the listener is
// closed (ServeNet then closes every connection), and runGoCase waits for
// all its goroutines.
func runGoCase(k int, drive driver) (measure, error) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return measure{}, err
	}
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		spinners = make([]spinner, k)
	)
	wg.Go(func() { echo.ServeNet(ln) })
	for i := range spinners {
		wg.Go(func() { spinners[i].spinUntil(&stop) })
	}
	m, err := drive(context.Background(), ln.Addr().String(), func() probe { return takeProbe(spinners) })
	stop.Store(true)
	ln.Close()
	wg.Wait()
	return m, err
}
