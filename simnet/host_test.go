package simnet_test

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/simnet"
)

func TestDialErrors(t *testing.T) {
	n := simnet.New(1)
	n.Host("b")
	err := sim(t, n, func(t *weft.Task) error {
		if _, err := weft.Dial(t, "tcp", "b:81"); !errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("dial a closed port: %v, want ECONNREFUSED", err)
		}
		var dns *net.DNSError
		if _, err := weft.Dial(t, "tcp", "nowhere:81"); !errors.As(err, &dns) {
			return fmt.Errorf("dial an unknown host: %v, want a DNSError", err)
		}
		if _, err := weft.Dial(t, "unix", "b:81"); err == nil {
			return errors.New("dial unix accepted")
		}
		if _, err := weft.Listen(t, "tcp", "b:82"); !errors.Is(err, syscall.EADDRNOTAVAIL) {
			return fmt.Errorf("listen on another host's address: %v", err)
		}
		ln, err := weft.Listen(t, "tcp", ":90")
		if err != nil {
			return err
		}
		defer ln.Close()
		if _, err := weft.Listen(t, "tcp", "localhost:90"); !errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("listen twice: %v, want EADDRINUSE", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
