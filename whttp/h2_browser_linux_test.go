package whttp_test

// A page load over HTTP/2 in headless Chromium (Debian's chromium, where
// installed; the test skips without it).

import (
	"fmt"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/testcert"
	"github.com/weft-go/weft/whttp"
)

// browserPage is the page Chromium loads: it fetches /probe, whose answer
// is the protocol the server saw, and sends that to /report.
const browserPage = `<!doctype html><title>h2</title><script>
fetch("/probe").then(r => r.text()).then(p => fetch("/report?" + encodeURIComponent(p)));
</script>`

// Chromium loads a page over https from whttp: by ALPN it speaks HTTP/2,
// and the server sees ProtoMajor 2 on the page and on its fetches.
func TestH2ChromiumPageLoad(t *testing.T) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium (Debian's package): the browser test is skipped:", err)
	}
	certs, err := testcert.New()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]string{} // path -> "proto alpn" as the server saw it
	reported := make(chan string, 1)
	h := whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		alpn := ""
		if r.TLS != nil {
			alpn = r.TLS.NegotiatedProtocol
		}
		mu.Lock()
		seen[r.URL.Path] = fmt.Sprintf("%s %d alpn=%s", r.Proto, r.ProtoMajor, alpn)
		mu.Unlock()
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, browserPage)
		case "/probe":
			fmt.Fprint(w, r.Proto)
		case "/report":
			select {
			case reported <- r.URL.RawQuery:
			default:
			}
		default:
			http.NotFound(w, r)
		}
	})
	ts := startServer(t, &whttp.Server{Handler: h, TLSConfig: certs.ServerConfig()}, weft.WithLoops(2))

	cmd := exec.Command(path, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--ignore-certificate-errors", "--user-data-dir="+t.TempDir(), "https://"+ts.addr+"/")
	// A process group of its own, so that Chromium's helper processes
	// are stopped with it, by its id.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		// Chromium stops its helpers (and reaps them) on SIGTERM; the
		// group's SIGKILL is for any it left behind.
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}()

	var got string
	select {
	case got = <-reported:
	case <-exited:
		t.Fatal("chromium exited before the page reported")
	case <-time.After(60 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the page did not report within 60 s; the server saw %v", seen)
	}
	if got != "HTTP%2F2.0" {
		t.Errorf("the page's fetch of /probe got %q, want HTTP/2.0 (escaped)", got)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range []string{"/", "/probe", "/report"} {
		if want := "HTTP/2.0 2 alpn=h2"; seen[p] != want {
			t.Errorf("%s: the server saw %q, want %q", p, seen[p], want)
		}
	}
}
