// Command h2specserver serves HTTP/2 for h2spec (CI's conformance run):
// h2c with prior knowledge, or h2 over TLS with a certificate made at
// start. It prints "listening <addr>" once it accepts, and stops on
// SIGINT or SIGTERM.
//
//	go run ./whttp/internal/h2specserver -listen 127.0.0.1:0 [-tls] [-loops 2]
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	useTLS := flag.Bool("tls", false, "h2 over TLS (else h2c with prior knowledge)")
	loops := flag.Int("loops", 1, "weft loops")
	flag.Parse()
	srv := &whttp.Server{
		Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "hello from whttp over HTTP/2\n")
		}),
		Protocols: new(http.Protocols),
	}
	if *useTLS {
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetHTTP2(true)
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{selfSigned()}}
	} else {
		// h2c alone: every connection is HTTP/2, so that a bad preface
		// closes it (with HTTP/1 on, it would be an HTTP/1 request).
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() { <-sig; srv.Close() }()
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", *listen)
		if err != nil {
			return struct{}{}, err
		}
		fmt.Println("listening", ln.Addr())
		return struct{}{}, srv.Serve(t, ln)
	}, weft.WithLoops(*loops))
	if err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

func selfSigned() tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		log.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
