package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/weft-go/weft/internal/tour"
	"github.com/weft-go/weft/internal/trace"
)

// runTour runs the named programs (all if none), each under a heading, with
// its output and the time it took.
func runTour(w io.Writer, args []string) error {
	var traceDir string
	var names []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--trace" || a == "-trace":
			if i+1 == len(args) {
				return fmt.Errorf("tour: --trace needs a directory")
			}
			i++
			traceDir = args[i]
		case strings.HasPrefix(a, "--trace=") || strings.HasPrefix(a, "-trace="):
			traceDir = a[strings.IndexByte(a, '=')+1:]
		default:
			names = append(names, a)
		}
	}
	progs := tour.Programs
	if len(names) > 0 {
		progs = nil
		for _, name := range names {
			p, ok := findProgram(name)
			if !ok {
				return fmt.Errorf("tour: no program %q (have %s)", name, programNames())
			}
			progs = append(progs, p)
		}
	}
	failed := 0
	took := make([]time.Duration, len(progs))
	for i, p := range progs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "== %s: %s\n", p.Name, p.Doc)
		var traced bytes.Buffer
		if traceDir != "" {
			// The program's Runs record into one document, a process each.
			trace.SetDefault(trace.NewStream(&traced))
		}
		start := time.Now()
		err := p.Run(w)
		took[i] = time.Since(start)
		if traceDir != "" {
			rec := trace.Default()
			trace.SetDefault(nil)
			if cerr := rec.Close(); cerr != nil {
				return fmt.Errorf("tour: tracing %s: %w", p.Name, cerr)
			}
			if terr := writeTraceFiles(traceDir, p.Name, "weft tour: "+p.Name, traced.Bytes()); terr != nil {
				return terr
			}
			fmt.Fprintf(w, "-- %s: trace in %s\n", p.Name, filepath.Join(traceDir, p.Name+".svg"))
		}
		fmt.Fprintf(w, "-- %s took %.2fs\n", p.Name, took[i].Seconds())
		if err != nil {
			fmt.Fprintf(w, "-- %s failed: %v\n", p.Name, err)
			failed++
		}
	}
	if len(progs) > 1 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "== end times")
		for i, p := range progs {
			fmt.Fprintf(w, "%-12s %.2fs\n", p.Name, took[i].Seconds())
		}
	}
	if failed > 0 {
		return fmt.Errorf("tour: %d program(s) failed", failed)
	}
	return nil
}

// findProgram returns the tour program called name, if there is one.
func findProgram(name string) (tour.Program, bool) {
	for _, p := range tour.Programs {
		if p.Name == name {
			return p, true
		}
	}
	return tour.Program{}, false
}

// programNames lists the tour programs' names, comma-separated.
func programNames() string {
	var names []string
	for _, p := range tour.Programs {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}
