package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestConvoyMeasuresEveryVariantAndDrawsTheChart(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "convoy.svg")
	var out, errOut bytes.Buffer
	args := []string{"bench", "convoy", "-duration", "200ms", "-warmup", "50ms", "-k", "0,1", "-conns", "1", "-markdown", "--svg", svg}
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	s := out.String()
	for _, want := range []string{"GOMAXPROCS=", "NumCPU=", "switch interval 5ms", "[tasks]", "[offload]", "[go]", "CPython", "summary:"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}

	// The Markdown table has fixed columns: variant, N, k, req/s, vs k=0,
	// p50, p99, p99 vs k=0, CPU units/s, ...
	seen := map[string]int{}
	for _, line := range strings.Split(s, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 13 || strings.TrimSpace(cells[1]) == "variant" || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		name, k := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[3])
		rate, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(cells[4]), ",", ""), 64)
		if err != nil || rate <= 0 {
			t.Errorf("%s k=%s: req/s %q is not a positive number", name, k, cells[4])
		}
		if k == "1" && !positiveSI(strings.TrimSpace(cells[9])) {
			t.Errorf("%s k=1: CPU units/s %q is not positive", name, cells[9])
		}
		seen[name]++
	}
	for _, v := range variants {
		if seen[v.short] != 2 {
			t.Errorf("variant %s: %d Markdown rows, want 2 (k=0 and k=1):\n%s", v.short, seen[v.short], s)
		}
	}

	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if err := wellFormed(data); err != nil {
		t.Errorf("the chart is not well-formed XML: %v", err)
	}
	for _, want := range []string{"<svg", "CPython", "weft (tasks)", "weft (Offload)", "Go (GOMAXPROCS=1)", "N=1"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	assertNoChildren(t)
}

// positiveSI reports whether s, a number with an optional k, M or G
// suffix, is above zero.
func positiveSI(s string) bool {
	s = strings.TrimRight(s, "kMG")
	v, err := strconv.ParseFloat(s, 64)
	return err == nil && v > 0
}

// wellFormed decodes data as XML to the end.
func wellFormed(data []byte) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// assertNoChildren fails the test if this process has a child process
// left (Linux only: it reads /proc).
func assertNoChildren(t *testing.T) {
	t.Helper()
	files, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil && strings.TrimSpace(string(data)) != "" {
			t.Errorf("child processes left behind: %s", data)
		}
	}
}

func TestBadFlagsAreErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "convoy", "-k", "abc"},
		{"bench", "convoy", "-k", "-1"},
		{"bench", "convoy", "-conns", "0"},
		{"bench", "convoy", "-conns", ""},
		{"bench", "convoy", "-variants", "tasks,nosuch"},
		{"bench", "convoy", "-duration", "0s"},
		{"bench", "convoy", "-interval", "-1ms"},
		{"bench", "convoy", "-nosuchflag"},
		{"bench", "convoy", "extra"},
		{"bench", "sha256", "-size", "0"},
		{"bench", "sha256", "-n", "0"},
		{"bench", "sha256", "-n", "x"},
		{"bench", "nosuch"},
	} {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		if code == 0 || !strings.Contains(errOut.String(), "weft: bench") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut.String())
		}
	}
	assertNoChildren(t)
}

func TestConvoyHelpIsNotAnError(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"bench", "convoy", "-h"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "-variants") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

func TestListsAndNumbersFormat(t *testing.T) {
	ks, err := parseIntList(" 4,0,2, 1,2", 0, 64)
	if err != nil || !slices.Equal(ks, []int{0, 1, 2, 4}) {
		t.Errorf("parseIntList = %v, %v", ks, err)
	}
	for v, want := range map[float64]string{0: "0", 999: "999", 24912.4: "24,912", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := fmtCount(v); got != want {
			t.Errorf("fmtCount(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{38: "38", 116: "116", 24900: "24.9k", 1.5e6: "1.50M"} {
		if got := barLabel(v); got != want {
			t.Errorf("barLabel(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestSmallRatiosKeepTheirDigits(t *testing.T) {
	for r, want := range map[float64]string{0.95: "0.95x", 1.2: "1.20x", 0.0011: "0.0011x", 0.0543: "0.0543x", 0: "0.00x"} {
		if got := fmtRatio(r); got != want {
			t.Errorf("fmtRatio(%v) = %q, want %q", r, got, want)
		}
	}
}
