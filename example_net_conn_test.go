//go:build unix

package weft_test

import (
	"crypto/tls"
	"fmt"
	"io"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/testcert"
)

// NetConn gives crypto/tls (or any code written against net.Conn) a
// connection that suspends the task instead of blocking the loop.
func ExampleConn_NetConn() {
	certs, _ := testcert.New() // a certificate authority and a server certificate for 127.0.0.1
	weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, _ := weft.Listen(t, "tcp", "127.0.0.1:0")
		defer ln.Close()
		server := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			c, err := ln.Accept(t)
			if err != nil {
				return struct{}{}, err
			}
			defer c.Close()
			tc := tls.Server(c.NetConn(t), certs.ServerConfig())
			_, err = io.WriteString(tc, "hello over TLS")
			tc.Close()
			return struct{}{}, err
		})
		c, _ := weft.Dial(t, "tcp", ln.Addr().String())
		defer c.Close()
		cfg := certs.ClientConfig()
		cfg.ServerName = "127.0.0.1"
		tc := tls.Client(c.NetConn(t), cfg)
		msg, err := io.ReadAll(tc)
		fmt.Println(string(msg), err, tc.ConnectionState().Version == tls.VersionTLS13)
		server.Await(t)
		return struct{}{}, nil
	})
	// Output: hello over TLS <nil> true
}
