//go:build unix

package weft_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

func mustListen(t *testing.T, wt *weft.Task, network, address string) *weft.Listener {
	t.Helper()
	ln, err := weft.Listen(wt, network, address)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func mustDial(t *testing.T, wt *weft.Task, network, address string) *weft.Conn {
	t.Helper()
	c, err := weft.Dial(wt, network, address)
	if err != nil {
		t.Fatal(err)
	}
	return c
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
			// (or fails at once where the route is missing).
			p := weft.Go(wt, func(wt *weft.Task) (*weft.Conn, error) { return weft.Dial(wt, "tcp", "192.0.2.1:80") })
			p.Cancel()
			_, err := p.Await(wt)
			if err == nil {
				t.Fatal("Dial to TEST-NET-1 succeeded")
			}
			if !errors.Is(err, context.Canceled) && !errors.Is(err, syscall.ENETUNREACH) && !errors.Is(err, syscall.EHOSTUNREACH) {
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

func TestPipeReadWriteAndEOF(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		r, w, err := weft.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var got []string
		run(t, func(wt *weft.Task) {
			weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
				defer w.Close()
				for _, m := range []string{"one", "two"} {
					wt.Sleep(5 * time.Millisecond)
					if _, err := w.Write(wt, []byte(m)); err != nil {
						return struct{}{}, err
					}
				}
				return struct{}{}, nil
			})
			buf := make([]byte, 16)
			for {
				n, err := r.Read(wt, buf)
				if err == io.EOF {
					got = append(got, "eof")
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(buf[:n]))
			}
		}, opts...)
		if strings.Join(got, ",") != "one,two,eof" {
			t.Fatalf("read %v", got)
		}
		if r.Fd() < 0 {
			t.Fatal("no fd")
		}
	})
}

func TestWriteToAPipeWithNoReaderIsEPIPE(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		r, w, err := weft.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		defer w.Close()
		run(t, func(wt *weft.Task) {
			if _, err := w.Write(wt, []byte("nobody listens")); !errors.Is(err, syscall.EPIPE) {
				t.Fatalf("Write = %v", err)
			}
		}, opts...)
	})
}

func TestCloseWakesAPipeReader(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		r, w, err := weft.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		run(t, func(wt *weft.Task) {
			p := weft.Go(wt, func(wt *weft.Task) (int, error) { return r.Read(wt, make([]byte, 8)) })
			go r.Close()
			if _, err := p.Await(wt); !errors.Is(err, os.ErrClosed) {
				t.Fatalf("Read after Close = %v", err)
			}
		}, opts...)
	})
}

func TestFilesGoThroughOffload(t *testing.T) {
	dir := t.TempDir()
	run(t, func(wt *weft.Task) {
		if _, err := weft.ReadFile(wt, filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("ReadFile(missing) = %v", err)
		}
		name := filepath.Join(dir, "f")
		if err := weft.WriteFile(wt, name, []byte("contents"), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := weft.ReadFile(wt, name); err != nil || string(b) != "contents" {
			t.Fatalf("ReadFile = %q, %v", b, err)
		}
		if err := weft.WriteFile(wt, filepath.Join(dir, "no", "such", "dir"), nil, 0o600); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("WriteFile into a missing directory = %v", err)
		}
	})
}
