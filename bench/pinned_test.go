package main

import (
	"os"
	"testing"
)

func TestParseStraceSummary(t *testing.T) {
	out := `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 61.02    0.100000          10     10000           write
 30.10    0.050000           5     10000      4000 read
  8.88    0.010000           2      5000           epoll_pwait
------ ----------- ----------- --------- --------- ----------------
100.00    0.160000           6     25000      4000 total
`
	calls, err := parseStraceSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if calls["write"] != 10000 || calls["read"] != 10000 || calls["epoll_pwait"] != 5000 || len(calls) != 3 {
		t.Fatalf("parsed %v", calls)
	}
	io, all := callsPer(pinnedRun{calls: map[string]int64{"read": 10, "write": 10, "futex": 5}, trips: 10})
	if io != 2 || all != 2.5 {
		t.Fatalf("per round trip: I/O %v, all %v", io, all)
	}
	if _, err := parseStraceSummary("strace: attach: permission denied\n"); err == nil {
		t.Fatal("an empty summary parsed")
	}
}

func TestSplitSpec(t *testing.T) {
	kind, backend, base := splitSpec("base:weft@uring+WEFT_URING_MULTISHOT=0+X=1")
	if kind != "weft" || backend != "uring" || !base {
		t.Fatalf("got %q %q %v", kind, backend, base)
	}
	if env := specEnv("weft@uring+A=1+B=2"); len(env) != 2 || env[0] != "A=1" || env[1] != "B=2" {
		t.Fatalf("env %q", env)
	}
	if kind, backend, base := splitSpec("gnet"); kind != "gnet" || backend != "" || base {
		t.Fatalf("got %q %q %v", kind, backend, base)
	}
}

func TestProcCPUOfThisProcess(t *testing.T) {
	a, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 50_000_000 {
		x ^= i
	}
	_ = x
	b, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if a < 0 || b < a {
		t.Fatalf("CPU time went from %v to %v", a, b)
	}
}
