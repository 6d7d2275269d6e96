package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/simnet"
	"github.com/weft-go/weft/whttp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The example's routes, served by whttp on a simulated host, in a seeded
// Run: the countdown's five seconds pass in virtual time.
func TestRoutesRunOnSimnet(t *testing.T) {
	n := simnet.New(1)
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		lnc := weft.NewChan[*weft.Listener](1)
		server := weft.GoWithNetwork(t, n.Host("api"), func(t *weft.Task) (int, error) {
			ln, err := weft.Listen(t, "tcp", ":8080")
			if err != nil {
				return 0, err
			}
			_ = lnc.Send(t, ln)
			return 0, (&whttp.Server{Handler: whttp.Adapt(routes())}).Serve(t, ln)
		})
		if _, err := lnc.Recv(t); err != nil {
			return 0, err
		}
		_, err := weft.GoWithNetwork(t, n.Host("user"), func(t *weft.Task) (int, error) {
			var c whttp.Client
			get := func(method, url, body string) (string, error) {
				req, err := http.NewRequest(method, url, strings.NewReader(body))
				if err != nil {
					return "", err
				}
				resp, err := c.Do(t, req)
				if err != nil {
					return "", err
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				return fmt.Sprint(resp.StatusCode, " ", string(b)), err
			}
			start := t.Now()
			for _, x := range []struct{ method, url, body, want string }{
				{"GET", "http://api:8080/hello?name=sim", "", "200 hello, sim\n"},
				{"POST", "http://api:8080/items", `{"name":"pear"}`, "201 {\"id\":1,\"name\":\"pear\"}\n"},
				{"GET", "http://api:8080/countdown", "", "200 5\n4\n3\n2\n1\nliftoff\n"},
			} {
				got, err := get(x.method, x.url, x.body)
				if err != nil {
					return 0, err
				}
				if got != x.want {
					return 0, fmt.Errorf("%s %s: %q, want %q", x.method, x.url, got, x.want)
				}
			}
			if d := t.Now().Sub(start); d < 5*time.Second || d > 6*time.Second {
				return 0, fmt.Errorf("the exchanges took %v of virtual time, want the countdown's 5 s", d)
			}
			return 0, nil
		}).Await(t)
		server.Cancel()
		if _, serr := server.Await(t); err == nil {
			err = serr
		}
		return 0, err
	}, weft.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
}
