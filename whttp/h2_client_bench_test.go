package whttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/testcert"
	"github.com/weft-go/weft/whttp"
)

// BenchmarkClientH2 compares whttp's HTTP/2 client with net/http's
// Transport against one server (net/http's HTTP/2 over TLS, in this
// process): requests one after another, and from 64 tasks (goroutines
// for net/http) at once on one connection. Run it under flock (see
// BRIEF): go test -run '^$' -bench ClientH2 -count 5 ./whttp.
func BenchmarkClientH2(b *testing.B) {
	certs, err := testcert.New()
	if err != nil {
		b.Fatal(err)
	}
	ns := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello, world")
	}))
	ns.TLS = certs.ServerConfig()
	ns.EnableHTTP2 = true
	ns.StartTLS()
	defer ns.Close()
	url := ns.URL + "/"
	check := func(b *testing.B, resp *http.Response, err error) {
		if err != nil {
			b.Error(err) // (not Fatal: called from tasks and goroutines)
			return
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != 12 || resp.ProtoMajor != 2 {
			b.Errorf("%d bytes, %v, %s", n, err, resp.Proto)
		}
	}
	for _, par := range []int{1, 64} {
		b.Run(fmt.Sprintf("whttp/tasks=%d", par), func(b *testing.B) {
			client := &whttp.Client{TLSConfig: certs.ClientConfig()}
			b.ReportAllocs()
			_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
				resp, err := client.Get(wt, url) // the connection, outside the timing
				check(b, resp, err)
				b.ResetTimer()
				var ps []*weft.Promise[struct{}]
				for i := range par {
					n := b.N / par
					if i < b.N%par {
						n++
					}
					ps = append(ps, weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
						for range n {
							resp, err := client.Get(wt, url)
							check(b, resp, err)
						}
						return struct{}{}, nil
					}))
				}
				_, err = weft.All(wt, ps...)
				b.StopTimer()
				return struct{}{}, err
			})
			if err != nil {
				b.Fatal(err)
			}
		})
		b.Run(fmt.Sprintf("net-http/goroutines=%d", par), func(b *testing.B) {
			tr := &http.Transport{TLSClientConfig: certs.ClientConfig(), ForceAttemptHTTP2: true}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			b.ReportAllocs()
			resp, err := client.Get(url)
			check(b, resp, err)
			b.ResetTimer()
			var wg sync.WaitGroup
			for i := range par {
				n := b.N / par
				if i < b.N%par {
					n++
				}
				wg.Go(func() {
					for range n {
						resp, err := client.Get(url)
						check(b, resp, err)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
		})
	}
}
