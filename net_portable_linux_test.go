package weft_test

import (
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestPortableAcceptCancelledAsAConnectionArrivesLeaksNothing(t *testing.T) {
	noGC(t)
	before := openFDs(t)
	for i := range 300 {
		weft.Run(func(wt *weft.Task) (int, error) {
			ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
			if err != nil {
				return 0, err
			}
			defer ln.Close()
			acc := weft.Go(wt, func(wt *weft.Task) (*weft.Conn, error) { return ln.Accept(wt) })
			peer, err := weft.Offload(wt, func() (net.Conn, error) {
				return net.Dial("tcp", ln.Addr().String())
			})
			if err != nil {
				return 0, err
			}
			defer peer.Close()
			if i%2 == 0 {
				wt.Sleep(time.Duration(i%7) * time.Microsecond)
			}
			acc.Cancel()
			if c, err := acc.Await(wt); err == nil {
				c.Close()
			}
			return 0, nil
		}, weft.WithPortableBackend())
	}
	if after := openFDs(t); after > before+2 {
		t.Fatalf("%d descriptors leaked over 300 cancelled Accepts", after-before)
	}
}

func TestPortableReadUnwoundByGoexitIsDoneWithTheBufferWhenItReturns(t *testing.T) {
	// Run with -race: a helper still writing into buf after Read returned
	// would race with the test's use of buf below.
	for range 20 {
		a, b := net.Pipe()
		stop := make(chan struct{})
		var writer sync.WaitGroup
		writer.Add(1)
		go func() {
			defer writer.Done()
			for {
				select {
				case <-stop:
					return
				default:
					b.Write([]byte("data"))
				}
			}
		}()
		buf := make([]byte, 4)
		done := make(chan struct{})
		go func() {
			defer close(done)
			weft.Run(func(wt *weft.Task) (int, error) {
				ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
				if err != nil {
					return 0, err
				}
				defer ln.Close()
				go func() {
					c, err := net.Dial("tcp", ln.Addr().String())
					if err != nil {
						return
					}
					defer c.Close()
					io.Copy(c, a)
				}()
				c, err := ln.Accept(wt)
				if err != nil {
					return 0, err
				}
				defer c.Close()
				spawn(wt, func(wt *weft.Task) {
					for {
						if _, err := c.Read(wt, buf); err != nil {
							return
						}
					}
				})
				weft.Go(wt, func(wt *weft.Task) (int, error) {
					wt.Sleep(time.Millisecond)
					runtime.Goexit()
					return 0, nil
				})
				return 0, nil
			}, weft.WithPortableBackend())
		}()
		<-done
		copy(buf, "mine") // the Run is over: buf is ours again
		close(stop)
		a.Close()
		b.Close()
		writer.Wait()
	}
}
