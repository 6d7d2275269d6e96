package simnet_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/simnet"
)

func TestDatagramsAreLostAndReordered(t *testing.T) {
	n := simnet.New(1)
	n.SetLink("a", "b", simnet.Link{Latency: time.Millisecond, Jitter: 20 * time.Millisecond, Loss: 0.3})
	const sent = 400
	var got []int
	err := sim(t, n, func(t *weft.Task) error {
		bound := weft.NewChan[struct{}](1)
		recv := weft.GoWithNetwork(t, n.Host("b"), func(t *weft.Task) (int, error) {
			pc, err := weft.ListenPacket(t, "udp", ":53")
			if err != nil {
				return 0, err
			}
			defer pc.Close()
			_ = bound.Send(t, struct{}{})
			buf := make([]byte, 8)
			for {
				k, err := weft.Timeout(t, time.Second, func(t *weft.Task) (int, error) {
					k, from, err := pc.ReadFrom(t, buf)
					if err == nil && from.String() != "a:10000" {
						return 0, fmt.Errorf("datagram from %v", from)
					}
					return k, err
				})
				if errors.Is(err, weft.ErrTimeout) {
					return 0, nil // all that will come has come
				}
				if err != nil {
					return 0, err
				}
				var v int
				fmt.Sscan(string(buf[:k]), &v)
				got = append(got, v)
			}
		})
		if _, err := bound.Recv(t); err != nil {
			return err
		}
		pc, err := weft.ListenPacket(t, "udp", ":0")
		if err != nil {
			return err
		}
		defer pc.Close()
		to := simnet.Addr{Net: "udp", Host: "b", Port: 53}
		for i := range sent {
			if _, err := pc.WriteTo(t, []byte(fmt.Sprint(i)), to); err != nil {
				return err
			}
			if err := t.Sleep(time.Millisecond); err != nil {
				return err
			}
		}
		_, err = recv.Await(t)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < sent*55/100 || len(got) > sent*85/100 {
		t.Fatalf("%d of %d datagrams arrived at 30%% loss", len(got), sent)
	}
	inversions := 0
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			inversions++
		}
	}
	if inversions == 0 {
		t.Fatal("20 ms of jitter on datagrams 1 ms apart reordered none")
	}
}
