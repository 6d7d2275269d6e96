//go:build unix

package weft_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/echo"
)

// listenEcho starts an echo server on a fresh loopback port and returns its
// listener; the caller closes it to stop the server.
func listenEcho(t *testing.T, wt *weft.Task, network, address string) *weft.Listener {
	t.Helper()
	ln := mustListen(t, wt, network, address)
	weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
		return struct{}{}, echo.Serve(wt, ln)
	})
	return ln
}

func mustListenPacket(t *testing.T, wt *weft.Task, network, address string) *weft.PacketConn {
	t.Helper()
	c, err := weft.ListenPacket(wt, network, address)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func roundTrip(wt *weft.Task, c *weft.Conn, msg []byte) error {
	if _, err := c.Write(wt, msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c.ReadWriter(wt), got); err != nil {
		return err
	}
	if !bytes.Equal(got, msg) {
		return errors.New("echo differs from what was sent")
	}
	return nil
}

func TestFiftyConnectionsEchoRandomPayloadsByteForByte(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln := listenEcho(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			err := weft.Group(wt, func(g *weft.TaskGroup) error {
				for i := 0; i < 50; i++ {
					g.Go(func(wt *weft.Task) error {
						c, err := weft.Dial(wt, "tcp", ln.Addr().String())
						if err != nil {
							return err
						}
						defer c.Close()
						rng := rand.New(rand.NewPCG(uint64(i), 7))
						for j := 0; j < 200; j++ {
							msg := make([]byte, 1+rng.IntN(2000))
							for k := range msg {
								msg[k] = byte(rng.Uint32())
							}
							if err := roundTrip(wt, c, msg); err != nil {
								return err
							}
						}
						return nil
					})
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}, opts...)
	})
}

func TestLargeWritesArriveWhole(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln := listenEcho(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			c := mustDial(t, wt, "tcp", ln.Addr().String())
			defer c.Close()
			msg := make([]byte, 4<<20)
			for i := range msg {
				msg[i] = byte(i * 7)
			}
			// Write and read at once: a 4 MiB echo does not fit in the kernel's
			// buffers, so a single task writing first would wait for ever.
			writer := weft.Go(wt, func(wt *weft.Task) (int, error) { return c.Write(wt, msg) })
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(c.ReadWriter(wt), got); err != nil {
				t.Fatal(err)
			}
			if n, err := writer.Await(wt); n != len(msg) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			if !bytes.Equal(got, msg) {
				t.Fatal("4 MiB echo differs")
			}
		}, opts...)
	})
}

func TestHalfCloseLetsThePeerAnswer(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			srv := weft.Go(wt, func(wt *weft.Task) (string, error) {
				c, err := ln.Accept(wt)
				if err != nil {
					return "", err
				}
				defer c.Close()
				req, err := io.ReadAll(c.ReadWriter(wt)) // until the client's EOF
				if err != nil {
					return "", err
				}
				_, err = c.Write(wt, []byte("got "+string(req)))
				return string(req), err
			})
			c := mustDial(t, wt, "tcp", ln.Addr().String())
			defer c.Close()
			c.Write(wt, []byte("question"))
			if err := c.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			answer, err := io.ReadAll(c.ReadWriter(wt))
			if err != nil || string(answer) != "got question" {
				t.Fatalf("answer %q, %v", answer, err)
			}
			if req, err := srv.Await(wt); req != "question" || err != nil {
				t.Fatalf("server saw %q, %v", req, err)
			}
		}, opts...)
	})
}

func TestPeerResetIsAnErrorNotASignal(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		// The peer is the net package, which can reset (SO_LINGER 0).
		nl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer nl.Close()
		go func() {
			c, err := nl.Accept()
			if err != nil {
				return
			}
			c.Read(make([]byte, 1)) // reset only once the client is connected
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}()
		run(t, func(wt *weft.Task) {
			c := mustDial(t, wt, "tcp", nl.Addr().String())
			defer c.Close()
			c.Write(wt, []byte("!"))
			buf := make([]byte, 10)
			_, rerr := c.Read(wt, buf)
			if !errors.Is(rerr, syscall.ECONNRESET) && rerr != io.EOF {
				t.Fatalf("Read from a reset peer = %v", rerr)
			}
			var werr error
			for i := 0; i < 10 && werr == nil; i++ {
				_, werr = c.Write(wt, make([]byte, 1024))
				wt.Sleep(time.Millisecond)
			}
			if !errors.Is(werr, syscall.EPIPE) && !errors.Is(werr, syscall.ECONNRESET) {
				t.Fatalf("Write to a reset peer = %v", werr)
			}
			var oe *net.OpError
			if !errors.As(werr, &oe) || oe.Op != "write" {
				t.Fatalf("error is not a *net.OpError: %#v", werr)
			}
		}, opts...)
	})
}

func TestDialToAClosedPortIsRefused(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		// Find a port nobody listens on.
		nl, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := nl.Addr().String()
		nl.Close()
		run(t, func(wt *weft.Task) {
			_, err := weft.Dial(wt, "tcp", addr)
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("Dial = %v", err)
			}
			var oe *net.OpError
			if !errors.As(err, &oe) || oe.Op != "dial" {
				t.Fatalf("not a dial *net.OpError: %#v", err)
			}
		}, opts...)
	})
}

func TestMalformedAddressesAndUnknownNetworksAreErrors(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			for _, c := range []struct{ network, address string }{
				{"tcp", "no-port-here"},
				{"tcp", "127.0.0.1:99999"},
				{"tcp", "127.0.0.1:-1"},
				{"tcp4", "[::1]:80"},
				{"tcpx", "127.0.0.1:80"},
				{"udp", "127.0.0.1:80"}, // not a stream network
			} {
				if _, err := weft.Dial(wt, c.network, c.address); err == nil {
					t.Errorf("Dial(%q, %q) succeeded", c.network, c.address)
				}
				if _, err := weft.Listen(wt, c.network, c.address); err == nil {
					t.Errorf("Listen(%q, %q) succeeded", c.network, c.address)
				}
			}
			if _, err := weft.ListenPacket(wt, "tcp", "127.0.0.1:0"); err == nil {
				t.Error("ListenPacket(tcp) succeeded")
			}
			var une net.UnknownNetworkError
			if _, err := weft.Dial(wt, "tcpx", "x:1"); !errors.As(err, &une) {
				t.Errorf("unknown network error = %#v", err)
			}
		}, opts...)
	})
}

func TestDialResolvesNamesOffTheLoop(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln := listenEcho(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			c := mustDial(t, wt, "tcp4", net.JoinHostPort("localhost", strconv.Itoa(port)))
			defer c.Close()
			if err := roundTrip(wt, c, []byte("by name")); err != nil {
				t.Fatal(err)
			}
		}, opts...)
	})
}

func TestCloseWakesATaskSuspendedInRead(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		for _, fromGoroutine := range []bool{false, true} {
			run(t, func(wt *weft.Task) {
				ln := listenEcho(t, wt, "tcp", "127.0.0.1:0")
				defer ln.Close()
				c := mustDial(t, wt, "tcp", ln.Addr().String())
				reader := weft.Go(wt, func(wt *weft.Task) (int, error) { return c.Read(wt, make([]byte, 8)) })
				if fromGoroutine {
					go c.Close()
				} else {
					c.Close()
				}
				if _, err := reader.Await(wt); !errors.Is(err, net.ErrClosed) {
					t.Fatalf("Read after Close (from goroutine: %v) = %v", fromGoroutine, err)
				}
				if err := c.Close(); !errors.Is(err, net.ErrClosed) {
					t.Fatalf("second Close = %v", err)
				}
			}, opts...)
		}
	})
}

func TestCloseWakesATaskSuspendedInAccept(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			p := weft.Go(wt, func(wt *weft.Task) (*weft.Conn, error) { return ln.Accept(wt) })
			ln.Close()
			if _, err := p.Await(wt); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Accept after Close = %v", err)
			}
		}, opts...)
	})
}

func TestCancelWakesEveryIOWait(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			// A server that accepts and then neither reads nor writes.
			var held []*weft.Conn
			weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
				for {
					c, err := ln.Accept(wt)
					if err != nil {
						return struct{}{}, nil
					}
					held = append(held, c)
				}
			})
			defer func() {
				for _, c := range held {
					c.Close()
				}
			}()
			c := mustDial(t, wt, "tcp", ln.Addr().String())
			defer c.Close()
			pc := mustListenPacket(t, wt, "udp", "127.0.0.1:0")
			defer pc.Close()
			ln2 := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln2.Close()
			big := make([]byte, 64<<20) // far more than the socket buffers hold
			waits := map[string]func(wt *weft.Task) error{
				"Accept":   func(wt *weft.Task) error { _, err := ln2.Accept(wt); return err },
				"Read":     func(wt *weft.Task) error { _, err := c.Read(wt, make([]byte, 8)); return err },
				"Write":    func(wt *weft.Task) error { _, err := c.Write(wt, big); return err },
				"ReadFrom": func(wt *weft.Task) error { _, _, err := pc.ReadFrom(wt, make([]byte, 8)); return err },
			}
			for name, wait := range waits {
				p := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, wait(wt) })
				wt.Sleep(5 * time.Millisecond) // let it get to its wait
				p.Cancel()
				if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
					t.Errorf("%s after Cancel = %v", name, err)
				}
			}
			// The connection still works after a cancelled Read.
			if _, err := c.Write(wt, nil); err != nil {
				t.Errorf("connection unusable after cancels: %v", err)
			}
		}, opts...)
	})
}

func TestCancelWakesDial(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			// 192.0.2.0/24 is TEST-NET-1: nothing answers, so the connect hangs
			// (or fails at once where the route is missing, or where a host
			// of a test network has that address and refuses: a sandbox's
			// gateway may be 192.0.2.1, and its refusal can come before the
			// Cancel on a loaded machine).
			p := weft.Go(wt, func(wt *weft.Task) (*weft.Conn, error) { return weft.Dial(wt, "tcp", "192.0.2.1:80") })
			p.Cancel()
			_, err := p.Await(wt)
			if err == nil {
				t.Fatal("Dial to TEST-NET-1 succeeded")
			}
			if !errors.Is(err, context.Canceled) && !errors.Is(err, syscall.ENETUNREACH) && !errors.Is(err, syscall.EHOSTUNREACH) && !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("Dial after Cancel = %v", err)
			}
		}, opts...)
	})
}

func TestUDPRoundTrip(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			a := mustListenPacket(t, wt, "udp", "127.0.0.1:0")
			defer a.Close()
			b := mustListenPacket(t, wt, "udp4", "127.0.0.1:0")
			defer b.Close()
			weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
				buf := make([]byte, 64)
				n, from, err := b.ReadFrom(wt, buf)
				if err != nil {
					return struct{}{}, err
				}
				_, err = b.WriteTo(wt, append([]byte("re: "), buf[:n]...), from)
				return struct{}{}, err
			})
			if _, err := a.WriteTo(wt, []byte("ping"), b.LocalAddr()); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			n, from, err := a.ReadFrom(wt, buf)
			if err != nil || string(buf[:n]) != "re: ping" || from.String() != b.LocalAddr().String() {
				t.Fatalf("got %q from %v, %v", buf[:n], from, err)
			}
			if _, err := a.WriteTo(wt, []byte("x"), nil); err == nil {
				t.Fatal("WriteTo(nil address) succeeded")
			}
		}, opts...)
	})
}

func TestUnixStreamAndDatagramRoundTrips(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		dir := t.TempDir()
		run(t, func(wt *weft.Task) {
			path := filepath.Join(dir, "s.sock")
			ln := listenEcho(t, wt, "unix", path)
			c := mustDial(t, wt, "unix", path)
			if err := roundTrip(wt, c, []byte("over a unix socket")); err != nil {
				t.Fatal(err)
			}
			c.Close()
			ln.Close()
			wt.Yield() // let the loop release the listener
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("socket file left after Close: %v", err)
			}

			ap, bp := filepath.Join(dir, "a.dgram"), filepath.Join(dir, "b.dgram")
			a := mustListenPacket(t, wt, "unixgram", ap)
			defer a.Close()
			b := mustListenPacket(t, wt, "unixgram", bp)
			defer b.Close()
			if _, err := a.WriteTo(wt, []byte("datagram"), b.LocalAddr()); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			n, from, err := b.ReadFrom(wt, buf)
			if err != nil || string(buf[:n]) != "datagram" || from.String() != ap {
				t.Fatalf("got %q from %v, %v", buf[:n], from, err)
			}
		}, opts...)
	})
}

func TestStalledPeerMakesTheWriterWaitNotBuffer(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			// The peer connects and never reads.
			peer := mustDial(t, wt, "tcp", ln.Addr().String())
			defer peer.Close()
			c, err := ln.Accept(wt)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			big := make([]byte, 256<<20)
			w := weft.Go(wt, func(wt *weft.Task) (int, error) { return c.Write(wt, big) })
			wt.Sleep(50 * time.Millisecond)
			if w.Settled() {
				t.Fatal("Write of 256 MiB to a peer that does not read returned")
			}
			w.Cancel()
			n, err := w.Await(wt)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Write = %d, %v", n, err)
			}
			// What left is bounded by the kernel's socket buffers, not by b.
			if n <= 0 || n > 64<<20 {
				t.Fatalf("%d bytes left a stalled peer's connection", n)
			}
		}, opts...)
	})
}

func TestAcceptedConnectionsAreServedOnEveryLoopAndCloseCleanly(t *testing.T) {
	noGC(t)
	before := openFDs(t)
	var mu sync.Mutex
	servedOn := map[int]int{}
	run(t, func(wt *weft.Task) {
		ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
		server := spawn(wt, func(wt *weft.Task) {
			weft.Group(wt, func(g *weft.TaskGroup) error {
				g.Handle(func(err error) { t.Errorf("connection: %v", err) })
				for {
					c, err := ln.Accept(wt)
					if err != nil {
						return err
					}
					g.Go(func(wt *weft.Task) error {
						defer c.Close()
						buf := make([]byte, 64)
						for {
							n, err := c.Read(wt, buf)
							if err == io.EOF {
								return nil
							}
							if err != nil {
								return err
							}
							mu.Lock()
							servedOn[wt.Loop()]++
							mu.Unlock()
							if _, err := c.Write(wt, buf[:n]); err != nil {
								return err
							}
						}
					})
				}
			})
		})
		_, err := weft.Offload(wt, func() (struct{}, error) {
			var wg sync.WaitGroup
			errs := make(chan error, 32)
			for i := range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := net.Dial("tcp", ln.Addr().String())
					if err != nil {
						errs <- err
						return
					}
					defer c.Close()
					for j := range 50 {
						msg := []byte(fmt.Sprintf("conn %d msg %d", i, j))
						c.Write(msg)
						got := make([]byte, len(msg))
						if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
							errs <- fmt.Errorf("echo %q: %q, %v", msg, got, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			return struct{}{}, <-errs
		})
		if err != nil {
			t.Error(err)
		}
		ln.Close()
		server.Await(wt)
	}, weft.WithLoops(2))
	if len(servedOn) != 2 {
		t.Fatalf("connections were served on loops %v, not on both", servedOn)
	}
	if after := openFDs(t); after > before+2 {
		t.Fatalf("%d descriptors left open", after-before)
	}
}

// A read that drained the socket makes the next one wait for an edge
// first (fd.go). Neither later data, nor a close that came with the
// data already read, may be lost by that.
func TestReadAfterDrainSeesLaterDataAndTheEnd(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		for _, closeAtOnce := range []bool{false, true} {
			_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
				ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
				defer ln.Close()
				addr := ln.Addr().String()
				done := make(chan error, 1)
				go func() {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						done <- err
						return
					}
					defer c.Close()
					c.Write([]byte("abc"))
					if closeAtOnce {
						done <- nil
						return // the close follows the data at once
					}
					time.Sleep(20 * time.Millisecond)
					c.Write([]byte("def"))
					time.Sleep(20 * time.Millisecond)
					done <- nil
				}()
				c, err := ln.Accept(wt)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if closeAtOnce {
					// Let the data and the end both arrive before the
					// first read.
					wt.Sleep(20 * time.Millisecond)
				}
				var got []byte
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(wt, buf)
					got = append(got, buf[:n]...)
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				want := "abcdef"
				if closeAtOnce {
					want = "abc"
				}
				if string(got) != want {
					t.Errorf("read %q, want %q", got, want)
				}
				// At the end, reads keep returning EOF.
				if n, err := c.Read(wt, buf); n != 0 || err != io.EOF {
					t.Errorf("read after EOF: %d, %v", n, err)
				}
				return struct{}{}, <-done
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}

// Many connections send while their readers hold back: on io_uring the
// received data waits in the ring's provided buffers, a connection stops
// receiving when it holds its share, and when the ring runs dry reads fall
// back to single receives. Every byte must still arrive, in order, and
// connections made afterwards must work.
func TestSlowReadersOnManyConnectionsLoseNothing(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		const conns, size = 60, 200 << 10
		payloads := make([][]byte, conns)
		for i := range payloads {
			payloads[i] = make([]byte, size)
			for j := range payloads[i] {
				payloads[i][j] = byte(rand.IntN(256))
			}
		}
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			addr := ln.Addr().String()
			var wg sync.WaitGroup
			for i := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := net.Dial("tcp", addr)
					if err != nil {
						t.Error(err)
						return
					}
					defer c.Close()
					c.Write([]byte{byte(i)})
					c.Write(payloads[i])
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			err := weft.Group(wt, func(g *weft.TaskGroup) error {
				for range conns {
					c, err := ln.Accept(wt)
					if err != nil {
						return err
					}
					g.Go(func(wt *weft.Task) error {
						defer c.Close()
						wt.Sleep(100 * time.Millisecond) // hold back while the data arrives
						got, err := io.ReadAll(c.ReadWriter(wt))
						if err != nil {
							return err
						}
						if len(got) != size+1 || !bytes.Equal(got[1:], payloads[got[0]]) {
							t.Errorf("connection %d: %d bytes, or not the ones sent", got[0], len(got))
						}
						return nil
					})
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			<-done
			// The buffers went back: new connections still echo.
			echoLn := listenEcho(t, wt, "tcp", "127.0.0.1:0")
			defer echoLn.Close()
			for range 3 {
				c := mustDial(t, wt, "tcp", echoLn.Addr().String())
				if err := roundTrip(wt, c, bytes.Repeat([]byte("after"), 1000)); err != nil {
					t.Fatal(err)
				}
				c.Close()
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}

// The README's echo server: a client that resets its connection must not
// stop it.
func TestREADMEServerSurvivesAClientReset(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		var failures int
		logger := slog.New(slog.DiscardHandler)
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			server := weft.Go(wt, func(t *weft.Task) (struct{}, error) {
				return struct{}{}, weft.Group(t, func(g *weft.TaskGroup) error {
					g.Handle(func(err error) { failures++; logger.Warn("connection failed", "err", err) })
					for {
						c, err := ln.Accept(t)
						if err != nil {
							return err
						}
						g.Go(func(t *weft.Task) error {
							defer c.Close()
							_, err := io.Copy(c.ReadWriter(t), c.ReadWriter(t))
							return err
						})
					}
				})
			})
			_, err := weft.Offload(wt, func() (struct{}, error) {
				// A client that resets: unread data plus SO_LINGER 0.
				bad, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					return struct{}{}, err
				}
				bad.Write(bytes.Repeat([]byte("x"), 1<<20))
				bad.(*net.TCPConn).SetLinger(0)
				bad.Close()
				// Then a good client, twice.
				for range 2 {
					c, err := net.Dial("tcp", ln.Addr().String())
					if err != nil {
						return struct{}{}, err
					}
					c.Write([]byte("still there?"))
					got := make([]byte, 12)
					_, err = io.ReadFull(c, got)
					c.Close()
					if err != nil || string(got) != "still there?" {
						return struct{}{}, errors.New("the server stopped echoing after a client reset")
					}
				}
				return struct{}{}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			ln.Close()
			if _, err := server.Await(wt); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("server ended with %v", err)
			}
		}, opts...)
		if failures != 1 {
			t.Logf("%d connection failures handled (the reset may race the echo)", failures)
		}
	})
}

// A client that connects and resets before the server's Accept returns:
// the accepted Conn still has the peer's address (accept4 gave it; asking
// getpeername afterwards fails with ENOTCONN), never a nil RemoteAddr.
func TestAcceptAfterPeerResetKeepsRemoteAddr(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			badAddr, err := weft.Offload(wt, func() (string, error) {
				bad, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					return "", err
				}
				addr := bad.LocalAddr().String()
				bad.(*net.TCPConn).SetLinger(0)
				bad.Close() // RST while the connection waits in the backlog
				return addr, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			wt.Sleep(50 * time.Millisecond) // let the reset reach the server's socket
			c, err := ln.Accept(wt)
			if err != nil {
				t.Fatalf("Accept: %v", err)
			}
			defer c.Close()
			ra := c.RemoteAddr()
			if ra == nil {
				t.Fatal("RemoteAddr of a connection reset before Accept is nil")
			}
			if got := ra.String(); got != badAddr {
				t.Fatalf("RemoteAddr = %q, want the client's address %q", got, badAddr)
			}
			if c.LocalAddr() == nil {
				t.Fatal("LocalAddr is nil")
			}
		}, opts...)
	})
}

func TestReadsUnderARacingTimeoutLoseNoBytes(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		const total = 2 << 20
		sent := make([]byte, total)
		for i := range sent {
			sent[i] = byte(rand.IntN(256))
		}
		var got bytes.Buffer
		timeouts := 0
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			// The writer is a plain goroutine, writing in bursts.
			weft.Go(wt, func(wt *weft.Task) (int, error) {
				return weft.Offload(wt, func() (int, error) {
					c, err := net.Dial("tcp", ln.Addr().String())
					if err != nil {
						return 0, err
					}
					defer c.Close()
					for off := 0; off < total; {
						n := min(total-off, 1+rand.IntN(64<<10))
						if _, err := c.Write(sent[off : off+n]); err != nil {
							return 0, err
						}
						off += n
						time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
					}
					return 0, nil
				})
			})
			c, err := ln.Accept(wt)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			buf := make([]byte, 32<<10)
			for {
				d := time.Duration(rand.IntN(200)) * time.Microsecond
				n, err := weft.Timeout(wt, d, func(wt *weft.Task) (int, error) { return c.Read(wt, buf) })
				got.Write(buf[:n])
				switch {
				case err == nil:
				case err == weft.ErrTimeout:
					if n != 0 {
						t.Fatalf("ErrTimeout with %d bytes", n)
					}
					timeouts++
				case errors.Is(err, io.EOF):
					return
				default:
					t.Fatal(err)
				}
			}
		}, opts...)
		if !bytes.Equal(got.Bytes(), sent) {
			t.Fatalf("received %d bytes of %d, or not the same ones (%d timeouts)", got.Len(), total, timeouts)
		}
		if timeouts == 0 {
			t.Log("no read timed out: the deadlines never raced")
		}
	})
}
