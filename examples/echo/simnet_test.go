package main

import (
	"testing"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/echo"
	"github.com/weft-go/weft/simnet"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The echo client, unchanged, against the echo server on a simulated
// network shared by two Runs (one per host, on the real clock).
func TestEchoClientAndServerRunOnSimnet(t *testing.T) {
	n := simnet.New(1)
	n.SetLink("srv", "cli", simnet.Link{}) // no latency: the real clock runs
	lnc := make(chan *weft.Listener, 1)
	served := make(chan error, 1)
	go func() {
		_, err := weft.Run(func(t *weft.Task) (int, error) {
			ln, err := weft.Listen(t, "tcp", ":7007")
			if err != nil {
				return 0, err
			}
			lnc <- ln
			return 0, echo.Serve(t, ln)
		}, weft.WithNetwork(n.Host("srv")))
		served <- err
	}()
	ln := <-lnc
	err := client("srv:7007", 200, 64, weft.WithNetwork(n.Host("cli")))
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
