package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/weft-go/weft/internal/cliflag"

	"github.com/weft-go/weft/internal/trace"
)

// traceCmd is `weft trace FILE.json [-o FILE.svg]`: it draws a trace-event
// file (as WithTrace writes it) as an SVG timeline. Flags may come before
// or after the file.
func traceCmd(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	out := fs.String("o", "", "write the SVG to this `file` (default: FILE with .svg for .json)")
	title := fs.String("title", "", "the picture's heading (default: the file's name)")
	width := fs.Int("width", 1200, "the picture's width in pixels")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: weft trace FILE.json [-o FILE.svg] [flags]")
		fs.PrintDefaults()
	}
	// The flag package stops at the first argument that is not a flag:
	// take the file out and parse the rest.
	var files, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			files = append(files, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			rest = append(rest, a)
			if f := fs.Lookup(strings.TrimLeft(a, "-")); f != nil && !strings.Contains(a, "=") && i+1 < len(args) {
				i++ // the flag's value (none of these flags is boolean)
				rest = append(rest, args[i])
			}
		default:
			files = append(files, a)
		}
	}
	if ok, err := cliflag.Parse(fs, stdout, stderr, rest); !ok {
		return err
	}
	if len(files) != 1 {
		fs.SetOutput(stderr)
		fs.Usage()
		return fmt.Errorf("trace: want one trace file, have %d", len(files))
	}
	in := files[0]
	if *out == "" {
		*out = strings.TrimSuffix(in, ".json") + ".svg"
	}
	if *title == "" {
		*title = filepath.Base(in)
	}
	data, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if err := trace.Validate(data); err != nil {
		fmt.Fprintf(stderr, "weft trace: %s is not a well-formed trace; drawing what can be read:\n%v\n", in, err)
	}
	if err := writeSVGFile(*out, data, trace.SVGOptions{Title: *title, Width: *width}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}

// writeTraceFiles writes a trace (the JSON WithTrace wrote) to
// DIR/NAME.json and its timeline to DIR/NAME.svg, making DIR if need be:
// what `weft tour --trace DIR` does for each program.
func writeTraceFiles(dir, name, title string, data []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	base := filepath.Join(dir, name)
	if err := os.WriteFile(base+".json", data, 0o644); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return writeSVGFile(base+".svg", data, trace.SVGOptions{Title: title})
}

// writeSVGFile renders the trace data into the file path.
func writeSVGFile(path string, data []byte, opt trace.SVGOptions) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	err = trace.RenderSVG(data, f, opt)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("trace: %s: %w", path, err)
	}
	return nil
}
