package main

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"testing"
	"time"
)

// TestHTTPServers starts each HTTP child, checks both paths' bodies and
// the memory report, without wrk.
func TestHTTPServers(t *testing.T) {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for _, kind := range httpKinds {
		ch, err := startChild(kind)
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string][]byte{"/plaintext": plaintext, "/json": jsonDoc} {
			resp, err := client.Get("http://" + ch.addr + path)
			if err != nil {
				ch.kill()
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !bytes.Equal(body, want) {
				t.Errorf("%s %s: %d bytes, want %d", kind, path, len(body), len(want))
			}
		}
		if m, err := ch.mem(); err != nil || m == 0 {
			t.Errorf("%s: mem %d, %v", kind, m, err)
		}
		tr.CloseIdleConnections()
		if err := ch.stop(); err != nil {
			t.Error(err)
		}
	}
	// One short wrk run, for its cost figures, when wrk is here.
	if _, err := exec.LookPath("wrk"); err == nil {
		r, err := measureHTTP(httpOptions{duration: time.Second, conns: 4, wrk: "wrk"}, "weft-http", "/plaintext")
		if err != nil {
			t.Fatal(err)
		}
		if r.requests <= 0 || r.cost.perCPUSecond() <= 0 || r.cost.allocsPerRequest() <= 0 {
			t.Errorf("wrk run %+v: want requests, CPU time and allocations", r)
		}
	}
	if per, err := memoryPerConn("weft-http", 20); err != nil || per <= 0 {
		t.Errorf("memoryPerConn: %v, %v", per, err)
	}
	if len(jsonDoc) < 4<<10 || len(jsonDoc) > 5<<10 {
		t.Errorf("the JSON document is %d bytes, want about 4 KB", len(jsonDoc))
	}
}

func TestParseWrk(t *testing.T) {
	out := `Running 5s test @ http://127.0.0.1:1/plaintext
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.10ms  520.00us   9.00ms   80.00%
  Latency Distribution
     50%  812.00us
     75%    1.20ms
     90%    1.80ms
     99%    2.50ms
  183000 requests in 5.00s, 22.00MB read
Requests/sec:  36600.12
Transfer/sec:      4.40MB
`
	r, err := parseWrk(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.rate != 36600.12 || r.p50 != 812*time.Microsecond || r.p99 != 2500*time.Microsecond || r.requests != 183000 {
		t.Fatalf("parsed %+v", r)
	}
	if _, err := parseWrk(out + "  Non-2xx or 3xx responses: 5\n"); err == nil {
		t.Fatal("failures not reported")
	}
}
