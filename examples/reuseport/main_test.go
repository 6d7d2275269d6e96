package main

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The test binary is also the worker: run again with WEFT_REUSEPORT_WORKER
// set, it serves instead of testing.
func TestMain(m *testing.M) {
	if addr := os.Getenv(workerEnv); addr != "" {
		if err := worker(addr, os.Stdout); err != nil {
			os.Stderr.WriteString("worker: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// TestProcessesShareOnePort: two worker processes on one port both serve
// requests; stopping them ends both.
func TestProcessesShareOnePort(t *testing.T) {
	var log strings.Builder
	s, err := start("127.0.0.1:0", 2, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.stop(); err != nil {
			t.Errorf("stopping the workers: %v", err)
		}
	}()
	pids := map[string]int{}
	for i := 0; i < 200 && len(pids) < 2; i++ {
		tr := &http.Transport{DisableKeepAlives: true} // a new connection each time
		c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		resp, err := c.Get("http://" + s.addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tr.CloseIdleConnections()
		pids[string(b)]++
	}
	if len(pids) != 2 {
		t.Fatalf("responses %v: want both processes serving", pids)
	}
	for who := range pids {
		if !strings.HasPrefix(who, "served by process ") {
			t.Fatalf("a response %q", who)
		}
	}
}
