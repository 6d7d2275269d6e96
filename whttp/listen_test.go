package whttp_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// serveUntil runs serve in a task of a Run of its own until the returned
// stop is called; stop cancels that task and returns what serve returned.
func serveUntil(t *testing.T, serve func(wt *weft.Task) error) (stop func() error) {
	t.Helper()
	errc := make(chan error, 1)
	cancel := make(chan func(), 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		weft.Run(func(wt *weft.Task) (struct{}, error) {
			p := weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
				errc <- serve(wt)
				return struct{}{}, nil
			})
			cancel <- p.Cancel
			return p.Await(wt)
		})
	}()
	c := <-cancel
	return func() error {
		c()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("the server did not stop within 20s")
		}
		return <-errc
	}
}

// getWithin GETs url with client until it answers or 10 s pass (the
// server may not be listening yet).
func getWithin(t *testing.T, client *http.Client, url string) *http.Response {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get(url)
		if err == nil {
			return resp
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestListenAndServeServesOnItsAddr(t *testing.T) {
	before := openFDs()
	addr := freeAddr(t)
	srv := &whttp.Server{Addr: addr, Handler: echoHandler()}
	stop := serveUntil(t, srv.ListenAndServe)
	client := newClient(t)
	resp := getWithin(t, client, "http://"+addr+"/hello")
	if got := bodyOf(t, resp); got != "GET /hello " {
		t.Errorf("body %q, want %q", got, "GET /hello ")
	}
	client.CloseIdleConnections()
	if err := stop(); err != nil {
		t.Errorf("ListenAndServe after a graceful stop: %v, want nil", err)
	}
	waitFDs(t, before)
}

func TestListenAndServeReportsABusyAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	run(t, func(wt *weft.Task) error {
		err := whttp.ListenAndServe(wt, l.Addr().String(), echoHandler())
		if err == nil || errors.Is(err, http.ErrServerClosed) {
			t.Errorf("ListenAndServe on a busy address: %v, want a listen error", err)
		}
		return nil
	})
}

func TestListenAndServeAfterCloseReturnsErrServerClosed(t *testing.T) {
	srv := &whttp.Server{Addr: freeAddr(t)}
	srv.Close()
	run(t, func(wt *weft.Task) error {
		if err := srv.ListenAndServe(wt); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("ListenAndServe after Close: %v, want http.ErrServerClosed", err)
		}
		if err := srv.ListenAndServeTLS(wt, "", ""); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("ListenAndServeTLS after Close: %v, want http.ErrServerClosed", err)
		}
		return nil
	})
}

// writeKeyPair writes the test certificate chain and its key as PEM files.
func writeKeyPair(t *testing.T, cert tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	var certPEM []byte
	for _, der := range cert.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestListenAndServeTLSLoadsTheKeyPairAndOffersHTTP2(t *testing.T) {
	before := openFDs()
	certs := newCerts(t)
	certFile, keyFile := writeKeyPair(t, certs.Server)
	addr := freeAddr(t)
	srv := &whttp.Server{Addr: addr, Handler: echoHandler()}
	stop := serveUntil(t, func(wt *weft.Task) error { return srv.ListenAndServeTLS(wt, certFile, keyFile) })
	tr := &http.Transport{TLSClientConfig: certs.ClientConfig(), ForceAttemptHTTP2: true}
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	resp := getWithin(t, client, "https://"+addr+"/tls")
	if resp.ProtoMajor != 2 {
		t.Errorf("protocol %s, want HTTP/2.0 (offered by ALPN by default)", resp.Proto)
	}
	if got := bodyOf(t, resp); got != "GET /tls " {
		t.Errorf("body %q, want %q", got, "GET /tls ")
	}
	tr.CloseIdleConnections()
	if srv.TLSConfig != nil {
		t.Error("ListenAndServeTLS changed Server.TLSConfig")
	}
	if err := stop(); err != nil {
		t.Errorf("ListenAndServeTLS after a graceful stop: %v, want nil", err)
	}
	waitFDs(t, before)
}

func TestServeTLSUsesTheConfigsCertificateWithoutFiles(t *testing.T) {
	certs := newCerts(t)
	config := certs.ServerConfig()
	srv := &whttp.Server{TLSConfig: config, Handler: echoHandler()}
	addr := make(chan string, 1)
	stop := serveUntil(t, func(wt *weft.Task) error {
		ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		addr <- ln.Addr().String()
		return srv.ServeTLS(wt, ln, "", "")
	})
	tr := &http.Transport{TLSClientConfig: certs.ClientConfig()}
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	resp := getWithin(t, client, "https://"+<-addr+"/x")
	if got := bodyOf(t, resp); got != "GET /x " {
		t.Errorf("body %q, want %q", got, "GET /x ")
	}
	tr.CloseIdleConnections()
	if len(config.NextProtos) != 0 {
		t.Errorf("ServeTLS changed the caller's TLSConfig: NextProtos %q", config.NextProtos)
	}
	if err := stop(); err != nil {
		t.Errorf("ServeTLS after a graceful stop: %v", err)
	}
}

func TestServeTLSWithMissingFilesFailsAndClosesTheListener(t *testing.T) {
	run(t, func(wt *weft.Task) error {
		ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		srv := &whttp.Server{}
		err = srv.ServeTLS(wt, ln, filepath.Join(t.TempDir(), "none.pem"), "none.key")
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ServeTLS with missing files: %v, want fs.ErrNotExist", err)
		}
		if _, err := ln.Accept(wt); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after the failed ServeTLS: %v, want net.ErrClosed", err)
		}
		return nil
	})
}
