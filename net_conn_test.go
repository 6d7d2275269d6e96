//go:build unix

package weft_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/testcert"
)

func TestNetConnCarriesATLSHandshakeAndData(t *testing.T) {
	certs, err := testcert.New()
	if err != nil {
		t.Fatal(err)
	}
	backends(t, func(t *testing.T, opts ...weft.Option) {
		before := openFDs(t)
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
		if !strings.HasPrefix(msg, "weft: ") || !strings.Contains(msg, "net_conn_test.go") {
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

type x509UnknownAuthority = x509.UnknownAuthorityError

// waitFDCount fails unless the count of open descriptors comes back to before
// within a few seconds (the portable backend's descriptors are closed by
// the Go runtime's poller, a little after Close).
func waitFDCount(t *testing.T, before int) {
	t.Helper()
	if before < 0 {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := openFDs(t)
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors open, %d before: some were not closed", n, before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
