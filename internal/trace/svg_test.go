package trace

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"
)

// svgParts is what the tests read back from a picture.
type svgParts struct {
	texts  []string // the content of each <text>
	titles []string // of each <title>
	rects  int
	width  string
}

// readSVG checks that data is well-formed XML with an svg root and
// returns its parts.
func readSVG(t *testing.T, data []byte) svgParts {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	var p svgParts
	var stack []string
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, data)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if len(stack) == 0 {
				if tok.Name.Local != "svg" || tok.Name.Space != "http://www.w3.org/2000/svg" {
					t.Fatalf("root element %v", tok.Name)
				}
				for _, a := range tok.Attr {
					if a.Name.Local == "width" {
						p.width = a.Value
					}
				}
			}
			stack = append(stack, tok.Name.Local)
			text.Reset()
			if tok.Name.Local == "rect" {
				p.rects++
			}
		case xml.CharData:
			text.Write(tok)
		case xml.EndElement:
			switch tok.Name.Local {
			case "text":
				p.texts = append(p.texts, text.String())
			case "title":
				p.titles = append(p.titles, text.String())
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 {
		t.Fatalf("unclosed elements %v", stack)
	}
	return p
}

func render(t *testing.T, trace []byte, opt SVGOptions) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := RenderSVG(trace, &out, opt); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func contains(ss []string, sub string) bool {
	for _, s := range ss {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// wideProgram records a program like smallProgram's on a millisecond
// scale, so that every slice is many pixels wide, and then runs a task for
// each of names.
func wideProgram(b *Buffer, names []string) {
	b.Spawn(0, 0, 1, 0)
	b.SetName(0, 1, "main")
	b.Resume(0, 1)
	b.Spawn(1*ms, 1, 2, pcOf(childFn))
	b.Suspend(2*ms, 1, Spawned)
	b.Resume(2*ms, 2)
	b.Suspend(5*ms, 2, WaitTimer)
	b.Resume(5*ms, 1)
	b.Suspend(6*ms, 1, WaitPromise)
	b.Poll(6*ms, 10*ms, 0)
	b.TimerFired(10*ms, 2)
	b.Resume(10*ms, 2)
	b.Suspend(12*ms, 2, WaitExternal)
	b.Poll(12*ms, 16*ms, 1)
	b.Offload(12*ms, 16*ms, 2, 0)
	b.WakeBy(16*ms, FromOffload, 2)
	b.Resume(16*ms, 2)
	b.Wake(17*ms, 2, 1)
	b.Suspend(18*ms, 2, Finished)
	b.Resume(18*ms, 1)
	b.Suspend(20*ms, 1, Finished)
	for i, n := range names {
		id := uint32(10 + i)
		ts := int64(20+i) * ms
		b.Spawn(ts, 0, id, 0)
		b.SetName(ts, id, n)
		b.Resume(ts, id)
		b.Suspend(ts+ms, id, Finished)
	}
}

// TestRenderSVGIsWellFormedAndNamesEveryTask draws a small program's
// trace, with a few tasks with awkward names, and checks that the picture
// is well-formed, names every task in the legend and in the tooltips of
// its slices, labels the rows and has a time axis with units.
func TestRenderSVGIsWellFormedAndNamesEveryTask(t *testing.T) {
	odd := []string{`<&"odd">`, "ünïcödé", "bad\x01char"}
	data := streamOf(t, func(r *Recorder) { wideProgram(r.NewBuffer(1, 0), odd) })
	p := readSVG(t, render(t, data, SVGOptions{Title: "small program"}))
	for _, n := range append([]string{"main", "trace.childFn"}, odd...) {
		want := strings.ReplaceAll(n, "\x01", "\uFFFD")
		if !contains(p.texts, want) {
			t.Errorf("the legend lacks %q", want)
		}
		if !contains(p.titles, want+": ") {
			t.Errorf("no slice's tooltip names %q", want)
		}
	}
	for _, label := range []string{"small program", "loop 0", "loop 0 offload 0", "time from the first event", "0", "5 ms", "20 ms"} {
		if !contains(p.texts, label) {
			t.Errorf("no text %q in %q", label, p.texts)
		}
	}
	for _, tip := range []string{"poll: 4 ms, 0 events", "timer at 10 ms", "offload done at 16 ms", "main: 2 ms, then spawn", "trace.childFn: 3 ms, then wait timer", "trace.childFn: 4 ms"} {
		if !contains(p.titles, tip) {
			t.Errorf("no tooltip %q in %q", tip, p.titles)
		}
	}
	if p.width != "1200" {
		t.Errorf("width %q", p.width)
	}
}

// TestRenderSVGMergesSlicesNarrowerThanAPixel draws 20 000 slices of
// two tasks over 1 s on 1000 pixels: the picture must stay small, and the
// merged rectangles must say what they hold.
func TestRenderSVGMergesSlicesNarrowerThanAPixel(t *testing.T) {
	data := streamOf(t, func(r *Recorder) {
		b := r.NewBuffer(1, 0)
		b.Spawn(0, 0, 1, 0)
		b.SetName(0, 1, "ping")
		b.Spawn(0, 0, 2, 0)
		b.SetName(0, 2, "pong")
		for i := range int64(20_000) {
			b.Resume(i*50_000, 1+uint32(i%2))
			b.Suspend(i*50_000+20_000, 1+uint32(i%2), Yield)
		}
	})
	svg := render(t, data, SVGOptions{Width: 1000 + svgLabelW + svgMarginR})
	p := readSVG(t, svg)
	if p.rects > 2*1000+20 {
		t.Errorf("%d rectangles for 1000 pixels", p.rects)
	}
	if len(svg) > 400<<10 {
		t.Errorf("the picture is %d KB", len(svg)>>10)
	}
	if !contains(p.titles, "slices in") || !contains(p.texts, "ping") || !contains(p.texts, "pong") {
		t.Errorf("merged slices are not described, or a task is missing: %q", p.titles[:min(5, len(p.titles))])
	}
	for _, tip := range p.titles {
		if strings.Contains(tip, "slices in") && !(strings.Contains(tip, "ping") && strings.Contains(tip, "pong")) {
			t.Fatalf("a merged rectangle %q does not name both tasks", tip)
		}
	}
}

// TestRenderSVGColoursByName checks that a name gets the same colour in
// every picture and that different names get different ones.
func TestRenderSVGColoursByName(t *testing.T) {
	if a, b := nameColour("main"), nameColour("main"); a != b {
		t.Fatal("a name changed colour")
	}
	seen := map[string]string{}
	for i := range 20 {
		n := fmt.Sprint("task", i)
		c := nameColour(n)
		if o, dup := seen[c]; dup {
			t.Errorf("%s and %s share colour %s", o, n, c)
		}
		seen[c] = n
		if len(c) != 7 || c[0] != '#' {
			t.Fatalf("colour %q", c)
		}
	}
	data := []byte(`[{"name":"a","ph":"X","ts":0,"dur":5,"pid":1,"tid":1},{"name":"b","ph":"X","ts":5,"dur":5,"pid":1,"tid":2}]`)
	svg := string(render(t, data, SVGOptions{}))
	for _, n := range []string{"a", "b"} {
		if strings.Count(svg, `fill="`+nameColour(n)+`"`) != 2 { // the slice and its swatch
			t.Errorf("%s is not drawn in its colour:\n%s", n, svg)
		}
	}
}

// TestRenderSVGOfNothing checks the picture of an empty trace, and that
// what is not a trace is an error.
func TestRenderSVGOfNothing(t *testing.T) {
	p := readSVG(t, render(t, []byte(`{"traceEvents":[],"displayTimeUnit":"ns"}`), SVGOptions{}))
	if !contains(p.texts, "no events") {
		t.Fatalf("texts %q", p.texts)
	}
	for _, bad := range []string{`{"traceEvents":`, `{"events":[]}`, `[1]`} {
		if err := RenderSVG([]byte(bad), io.Discard, SVGOptions{}); err == nil {
			t.Errorf("RenderSVG accepted %s", bad)
		}
	}
}

// TestRenderSVGOfSeveralRuns labels the rows of each run with its
// process name.
func TestRenderSVGOfSeveralRuns(t *testing.T) {
	data := streamOf(t, func(r *Recorder) {
		smallProgram(r.NewBuffer(1, 0), 0, 0)
		smallProgram(r.NewBuffer(2, 0), 0, 0)
	})
	p := readSVG(t, render(t, data, SVGOptions{}))
	for _, label := range []string{"weft run 1: loop 0", "weft run 2: loop 0", "weft run 2: loop 0 offload 0"} {
		if !contains(p.texts, label) {
			t.Errorf("no row %q in %q", label, p.texts)
		}
	}
}

func TestFormatsOfDurations(t *testing.T) {
	for us, want := range map[float64]string{0: "0", 0.25: "250 ns", 12.5: "12.5 µs", 3200: "3.2 ms", 1.25e6: "1.25 s", 1e3: "1 ms"} {
		if got := fmtMicros(us); got != want {
			t.Errorf("%v µs: %q, want %q", us, got, want)
		}
	}
	for rough, want := range map[float64]float64{0.7: 1, 1: 1, 1.2: 2, 3: 5, 7: 10, 180: 200, 0.03: 0.05} {
		if got := niceStep(rough); got != want {
			t.Errorf("niceStep(%v) = %v, want %v", rough, got, want)
		}
	}
}
