//go:build unix

package weft_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/testcert"
)

// connPair returns the two ends of a loopback TCP connection on wt's loop.
func connPair(t *testing.T, wt *weft.Task) (a, b *weft.Conn) {
	t.Helper()
	ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
	defer ln.Close()
	b = mustDial(t, wt, "tcp", ln.Addr().String())
	a, err := ln.Accept(wt)
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

// checkTimeout fails unless err is the error a net.Conn gives past a
// deadline.
func checkTimeout(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v, want one matching os.ErrDeadlineExceeded", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v (%T): not a net.Error with Timeout() true", err, err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("err = %v (%T): not a *net.OpError", err, err)
	}
}

func TestPastReadDeadlineFailsAtOnceEvenWithDataWaiting(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			if _, err := b.Write(wt, []byte("data")); err != nil {
				return struct{}{}, err
			}
			wt.Sleep(20 * time.Millisecond) // let it arrive
			a.SetReadDeadline(time.Now().Add(-time.Second))
			buf := make([]byte, 8)
			_, err := a.Read(wt, buf)
			checkTimeout(t, err)
			// Zero clears it: the data was not lost.
			a.SetReadDeadline(time.Time{})
			n, err := a.Read(wt, buf)
			if err != nil || string(buf[:n]) != "data" {
				t.Fatalf("after clearing: %q, %v", buf[:n], err)
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestReadDeadlineEndsAWaitAndTheConnStaysUsable(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			start := time.Now()
			a.SetReadDeadline(start.Add(50 * time.Millisecond))
			buf := make([]byte, 8)
			_, err := a.Read(wt, buf)
			checkTimeout(t, err)
			if el := time.Since(start); el < 45*time.Millisecond || el > 5*time.Second {
				t.Fatalf("read ended after %v, want about 50ms", el)
			}
			a.SetReadDeadline(time.Time{})
			if _, err := b.Write(wt, []byte("late")); err != nil {
				return struct{}{}, err
			}
			n, err := a.Read(wt, buf)
			if err != nil || string(buf[:n]) != "late" {
				t.Fatalf("after the timeout: %q, %v", buf[:n], err)
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestWriteDeadlineEndsAWriteToAStalledPeer(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			a.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			big := make([]byte, 64<<20) // far more than the socket buffers hold
			n, err := a.Write(wt, big)
			checkTimeout(t, err)
			if n >= len(big) {
				t.Fatalf("wrote %d of %d bytes to a peer that reads nothing", n, len(big))
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestExtendingADeadlineWhileAnotherTaskWaitsReArmsIt(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		opts = append(opts, weft.WithVirtualTime(start))
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			a.SetReadDeadline(wt.Now().Add(time.Second))
			reader := weft.Go(wt, func(wt *weft.Task) (string, error) {
				buf := make([]byte, 8)
				n, err := a.Read(wt, buf)
				return string(buf[:n]), err
			})
			wt.Sleep(500 * time.Millisecond)
			a.SetReadDeadline(wt.Now().Add(10 * time.Second)) // while the reader waits
			wt.Sleep(2 * time.Second)                         // past the first deadline
			if _, err := b.Write(wt, []byte("hi")); err != nil {
				return struct{}{}, err
			}
			got, err := reader.Await(wt)
			if err != nil || got != "hi" {
				t.Fatalf("reader: %q, %v; want the data, the deadline having moved", got, err)
			}
			if el := wt.Now().Sub(start); el != 2500*time.Millisecond {
				t.Fatalf("virtual time %v, want 2.5s", el)
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestShorteningADeadlineFromAnotherGoroutineEndsTheWait(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			a.SetReadDeadline(time.Now().Add(time.Hour))
			start := time.Now()
			reader := weft.Go(wt, func(wt *weft.Task) (int, error) {
				return a.Read(wt, make([]byte, 8))
			})
			weft.Offload(wt, func() (struct{}, error) { // another goroutine
				time.Sleep(30 * time.Millisecond)
				return struct{}{}, a.SetReadDeadline(time.Now())
			})
			_, err := reader.Await(wt)
			checkTimeout(t, err)
			if el := time.Since(start); el > 5*time.Second {
				t.Fatalf("read ended after %v", el)
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestClearingADeadlineWhileAnotherTaskWaitsLetsItWait(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		opts = append(opts, weft.WithVirtualTime(start))
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			a.SetDeadline(wt.Now().Add(time.Second))
			reader := weft.Go(wt, func(wt *weft.Task) (string, error) {
				buf := make([]byte, 8)
				n, err := a.Read(wt, buf)
				return string(buf[:n]), err
			})
			wt.Sleep(100 * time.Millisecond)
			a.SetDeadline(time.Time{})
			// Another deadline elsewhere keeps virtual time moving.
			b.SetReadDeadline(wt.Now().Add(time.Hour))
			other := weft.Go(wt, func(wt *weft.Task) (int, error) { return b.Read(wt, make([]byte, 1)) })
			wt.Sleep(5 * time.Second)
			if _, err := b.Write(wt, []byte("ok")); err != nil {
				return struct{}{}, err
			}
			got, err := reader.Await(wt)
			if err != nil || got != "ok" {
				t.Fatalf("reader: %q, %v; want the data, the deadline having been cleared", got, err)
			}
			b.SetReadDeadline(wt.Now()) // end the other reader
			_, err = other.Await(wt)
			checkTimeout(t, err)
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestVirtualTimeDrivesADeadline(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		opts = append(opts, weft.WithVirtualTime(start))
		real0 := time.Now()
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			a.SetReadDeadline(wt.Now().Add(time.Hour))
			_, err := a.Read(wt, make([]byte, 8))
			checkTimeout(t, err)
			if el := wt.Now().Sub(start); el != time.Hour {
				t.Fatalf("virtual time %v, want 1h", el)
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(real0); el > 5*time.Second {
			t.Fatalf("an hour of virtual time took %v of real time", el)
		}
	})
}

func TestNetConnCarriesATLSHandshakeAndData(t *testing.T) {
	certs, err := testcert.New()
	if err != nil {
		t.Fatal(err)
	}
	backends(t, func(t *testing.T, opts ...weft.Option) {
		before := fdCount(t)
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			a, b := connPair(t, wt)
			defer a.Close()
			defer b.Close()
			server := weft.Go(wt, func(wt *weft.Task) (string, error) {
				tc := tls.Server(a.NetConn(wt), certs.ServerConfig())
				if err := tc.Handshake(); err != nil {
					return "", err
				}
				line := make([]byte, 5)
				if _, err := io.ReadFull(tc, line); err != nil {
					return "", err
				}
				_, err := tc.Write(bytes.ToUpper(line))
				return string(line), err
			})
			cfg := certs.ClientConfig()
			cfg.ServerName = "127.0.0.1"
			tc := tls.Client(b.NetConn(wt), cfg)
			if _, err := tc.Write([]byte("hello")); err != nil {
				return struct{}{}, err
			}
			reply := make([]byte, 5)
			if _, err := io.ReadFull(tc, reply); err != nil {
				return struct{}{}, err
			}
			got, err := server.Await(wt)
			if err != nil {
				return struct{}{}, err
			}
			if got != "hello" || string(reply) != "HELLO" {
				t.Fatalf("server read %q, client read %q", got, reply)
			}
			if !tc.ConnectionState().HandshakeComplete {
				t.Fatal("handshake not complete")
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		waitFDCount(t, before)
	})
}

func TestTLSClientRejectsAnUntrustedCertificate(t *testing.T) {
	certs, err := testcert.New()
	if err != nil {
		t.Fatal(err)
	}
	_, err = weft.Run(func(wt *weft.Task) (struct{}, error) {
		a, b := connPair(t, wt)
		defer a.Close()
		defer b.Close()
		weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
			tls.Server(a.NetConn(wt), certs.ServerConfig()).Handshake()
			return struct{}{}, nil
		})
		err := tls.Client(b.NetConn(wt), &tls.Config{ServerName: "127.0.0.1"}).Handshake()
		var uae x509UnknownAuthority
		if err == nil || !errors.As(err, &uae) {
			t.Fatalf("handshake with an unknown authority: %v", err)
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestNetConnUsedFromAnotherTaskPanics(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		a, b := connPair(t, wt)
		defer a.Close()
		defer b.Close()
		nc := a.NetConn(wt)
		p := weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
			nc.Read(make([]byte, 1))
			return struct{}{}, nil
		})
		// A misuse is loud: Await re-raises it rather than return it.
		msg := panicMessage(func() { p.Await(wt) })
		if !strings.HasPrefix(msg, "weft: ") || !strings.Contains(msg, "deadline_test.go") {
			t.Fatalf("Await of a task that read from another task's NetConn panicked with %q, want the weft: panic and where it happened", msg)
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLoopConnActsForWhicheverTaskCallsIt(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		a, b := connPair(t, wt)
		defer a.Close()
		defer b.Close()
		lc := a.LoopConn()
		reader := weft.Go(wt, func(wt *weft.Task) (string, error) {
			buf := make([]byte, 3)
			_, err := io.ReadFull(lc, buf)
			return string(buf), err
		})
		if _, err := b.Write(wt, []byte("abc")); err != nil {
			return struct{}{}, err
		}
		got, err := reader.Await(wt)
		if err != nil || got != "abc" {
			t.Fatalf("LoopConn read in another task: %q, %v", got, err)
		}
		if _, err := lc.Write([]byte("x")); err != nil { // and in this one
			t.Fatal(err)
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSetDeadlineAfterCloseIsErrClosed(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		a, b := connPair(t, wt)
		b.Close()
		a.Close()
		if err := a.SetDeadline(time.Now()); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("SetDeadline after Close: %v", err)
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
