package main

import (
	"bytes"
	"context"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestParseBenchCSV reads redis-benchmark's --csv output as 7.0 prints it.
func TestParseBenchCSV(t *testing.T) {
	out := []byte(`"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"SET","28943.56","1.650","0.184","1.551","2.615","3.535","12.911"
`)
	if v, err := parseBenchCSV(out, "set"); err != nil || v != 28943.56 {
		t.Errorf("set: %v, %v", v, err)
	}
	if _, err := parseBenchCSV(out, "get"); err == nil {
		t.Error("get: no error for a missing line")
	}
	if _, err := parseBenchCSV([]byte(`"SET","fast"`), "set"); err == nil {
		t.Error("no error for a rate that is not a number")
	}
}

// TestParseRespCases checks the -cases flag.
func TestParseRespCases(t *testing.T) {
	cs, err := parseRespCases("get:50:16, SET:1000:1")
	if err != nil || len(cs) != 2 || cs[0] != (respCase{"get", 50, 16}) || cs[1] != (respCase{"set", 1000, 1}) {
		t.Fatalf("%v, %v", cs, err)
	}
	for _, bad := range []string{"get:50", "incr:1:1", "get:0:1", "get:1:x"} {
		if _, err := parseRespCases(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if cs, _ := parseRespCases(""); len(cs) != len(respCases) {
		t.Errorf("default: %v", cs)
	}
}

// TestResp runs `bench resp`'s measurement briefly against each server
// (pipelined and not), when redis-benchmark and two CPUs are there; every
// child has exited when runResp returns.
func TestResp(t *testing.T) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		t.Skip("no redis-benchmark (Debian: apt-get install redis-tools)")
	}
	if _, err := lookTaskset(); err != nil || runtime.NumCPU() < 2 {
		t.Skip("needs taskset and two CPUs")
	}
	o := respOptions{
		servers: []string{"weft@epoll", "weft-2loops@uring", "net"},
		cases:   []respCase{{"set", 4, 1}, {"get", 4, 8}},
		reps:    1, n: 2000, np: 8000,
		serverCPU: 0, loadCPU: 1,
		timeout: time.Minute, bin: bin,
	}
	var progress bytes.Buffer
	res, err := runResp(context.Background(), o, &progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if len(res) != 6 {
		t.Fatalf("%d results, want 6", len(res))
	}
	for _, r := range res {
		if len(r.runs) != 1 || r.runs[0].rps <= 0 || r.runs[0].requests <= 0 {
			t.Errorf("%s %v: %+v", r.server, r.c, r.runs)
		}
	}
	var out bytes.Buffer
	printResp(&out, o, res)
	for _, want := range []string{"SET -c 4 -P 1", "GET -c 4 -P 8", "weft-2loops@uring"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("%s\n%s", progress.String(), out.String())
}

// TestParsePerfStat reads perf stat -x, output.
func TestParsePerfStat(t *testing.T) {
	out := `# started on Sun Dec  6 07:30:00 2026

402115,,raw_syscalls:sys_enter,3001234567,100.00,,
1200,,context-switches,3001234567,100.00,,
200111,,syscalls:sys_enter_read,3001234567,100.00,,
<not counted>,,syscalls:sys_enter_epoll_pwait2,0,0.00,,
`
	c, err := parsePerfStat(out)
	if err != nil {
		t.Fatal(err)
	}
	if c[perfAll] != 402115 || c[perfSwitches] != 1200 || c["read"] != 200111 || len(c) != 3 {
		t.Errorf("%v", c)
	}
	if _, err := parsePerfStat("1,,context-switches,1,100.00,,\n"); err == nil {
		t.Error("no error without the system call total")
	}
}
