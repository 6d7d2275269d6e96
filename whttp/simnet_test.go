package whttp_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/simnet"
	"github.com/weft-go/weft/whttp"
)

// The HTTP server and client run unchanged on simulated hosts, in a
// seeded Run: requests from two hosts, with latency, over keep-alive.
func TestServerAndClientRunOnSimnet(t *testing.T) {
	for seed := range uint64(10) {
		n := simnet.New(seed)
		n.SetLink("web", "b", simnet.Link{Latency: 20 * time.Millisecond, Jitter: 10 * time.Millisecond})
		_, err := weft.Run(func(t *weft.Task) (int, error) {
			lnc := weft.NewChan[*weft.Listener](1)
			srv := &whttp.Server{Handler: whttp.Adapt(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, "hello %s from %s", r.URL.Path[1:], r.RemoteAddr)
			}))}
			server := weft.GoWithNetwork(t, n.Host("web"), func(t *weft.Task) (int, error) {
				ln, err := weft.Listen(t, "tcp", ":80")
				if err != nil {
					return 0, err
				}
				_ = lnc.Send(t, ln)
				return 0, srv.Serve(t, ln)
			})
			ln, err := lnc.Recv(t)
			if err != nil {
				return 0, err
			}
			var ps []*weft.Promise[string]
			for _, host := range []string{"a", "b"} {
				ps = append(ps, weft.GoWithNetwork(t, n.Host(host), func(t *weft.Task) (string, error) {
					var c whttp.Client
					out := ""
					for i := range 2 {
						resp, err := c.Get(t, fmt.Sprintf("http://web/%s%d", host, i))
						if err != nil {
							return "", err
						}
						b, err := io.ReadAll(resp.Body)
						resp.Body.Close()
						if err != nil {
							return "", err
						}
						out += string(b) + ";"
					}
					return out, nil
				}))
			}
			got, err := weft.All(t, ps...)
			if err != nil {
				return 0, err
			}
			for i, want := range []string{"hello a0 from a:10000;hello a1 from a:10000;", "hello b0 from b:10000;hello b1 from b:10000;"} {
				if got[i] != want {
					return 0, fmt.Errorf("client %d got %q, want %q (keep-alive: one connection)", i, got[i], want)
				}
			}
			if ln.Addr().String() != "web:80" {
				return 0, fmt.Errorf("listening on %v", ln.Addr())
			}
			server.Cancel() // a graceful stop: Serve returns nil
			_, err = server.Await(t)
			return 0, err
		}, weft.WithSeed(seed))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}
