package trace

// The timeline: a trace-event document drawn as a self-contained SVG.
//
// A row per track (a loop, an offload lane), in the order of the tracks'
// sort indexes; task slices as rectangles, coloured by task name (the same
// name always gets the same colour); polls as a thin bar at the bottom of
// the row; instants and zero-length events (timers, wakes) as ticks at
// its top; a time axis from the first event; a legend with every slice
// name. Each mark has a <title>, which browsers show as a tooltip. Slices
// narrower than a pixel are merged with their neighbours into one
// rectangle that says how many it holds and whose they are, so a picture
// has at most a few rectangles per pixel column whatever the trace's size.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// SVGOptions adjusts RenderSVG's picture. The zero value is fine.
type SVGOptions struct {
	Title string // the heading; "weft trace" if empty
	Width int    // the picture's width in pixels; 1200 if 0, at least 400
}

// Picture geometry, in SVG user units (pixels).
const (
	svgLabelW  = 170 // left of the plot: the row labels
	svgMarginR = 24
	svgTop     = 64 // the first row's top
	svgRowH    = 26
	svgRowGap  = 8
	svgPollH   = 4 // the poll bar at the bottom of a row
	svgTickH   = 6 // an instant's tick at the top of a row
)

// sevent is an event as the renderer reads it.
type sevent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	Pid  any            `json:"pid"`
	Tid  any            `json:"tid"`
	Args map[string]any `json:"args"`
}

// sspan is something drawn on a row: a slice, a poll or (start == end)
// an instant.
type sspan struct {
	start, end float64 // µs
	name       string
	detail     string // for the tooltip: the reason it ended, the events a poll found
}

// srow is a track and what is drawn on it.
type srow struct {
	pid, tid string
	label    string
	sort     float64
	first    int // index of the track's first event, to keep the order stable
	events   []sevent
	slices   []sspan
	polls    []sspan
	marks    []sspan
}

// RenderSVG draws the trace-event JSON document data (an object with
// traceEvents, or a bare array) as a self-contained SVG timeline on w. It
// reads B/E pairs and X events as slices (those with cat "poll" as polls),
// instants and zero-length X events as ticks, and M events for the names
// and order of tracks; it ignores the rest.
func RenderSVG(data []byte, w io.Writer, opt SVGOptions) error {
	evs, err := parseEvents(data)
	if err != nil {
		return err
	}
	if opt.Title == "" {
		opt.Title = "weft trace"
	}
	if opt.Width == 0 {
		opt.Width = 1200
	}
	opt.Width = max(opt.Width, 400)
	rows := buildRows(evs)
	var b strings.Builder
	height := drawTimeline(&b, rows, opt)
	_, err = fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n%s</svg>\n",
		opt.Width, height, opt.Width, height, b.String())
	return err
}

// parseEvents decodes a trace-event document.
func parseEvents(data []byte) ([]sevent, error) {
	data = bytes.TrimSpace(data)
	var evs []sevent
	if len(data) > 0 && data[0] == '[' {
		if err := json.Unmarshal(data, &evs); err != nil {
			return nil, fmt.Errorf("trace: reading the events: %w", err)
		}
		return evs, nil
	}
	var doc struct {
		TraceEvents *[]sevent `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("trace: reading the events: %w", err)
	}
	if doc.TraceEvents == nil {
		return nil, errors.New("trace: the document has no traceEvents")
	}
	return *doc.TraceEvents, nil
}

// identString formats a pid or tid, which may be a number or a string.
func identString(x any) string {
	switch x := x.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(x)
}

// buildRows sorts the events into tracks and pairs them into spans.
func buildRows(evs []sevent) []*srow {
	procs := map[string]string{}
	byKey := map[string]*srow{}
	var rows []*srow
	row := func(i int, e sevent) *srow {
		pid, tid := identString(e.Pid), identString(e.Tid)
		k := pid + "\x00" + tid
		r, ok := byKey[k]
		if !ok {
			r = &srow{pid: pid, tid: tid, first: i, sort: math.Inf(1)}
			if n, err := strconv.ParseFloat(tid, 64); err == nil {
				r.sort = n
			}
			byKey[k] = r
			rows = append(rows, r)
		}
		return r
	}
	for i, e := range evs {
		switch e.Ph {
		case "M":
			switch e.Name {
			case "process_name":
				if n, ok := e.Args["name"].(string); ok {
					procs[identString(e.Pid)] = n
				}
			case "thread_name":
				if n, ok := e.Args["name"].(string); ok {
					row(i, e).label = n
				}
			case "thread_sort_index":
				if n, ok := e.Args["sort_index"].(float64); ok {
					row(i, e).sort = n
				}
			}
		case "B", "E", "X", "i", "I":
			r := row(i, e)
			r.events = append(r.events, e)
		}
	}
	pids := map[string]bool{}
	for _, r := range rows {
		pids[r.pid] = true
	}
	var kept []*srow
	for _, r := range rows {
		if len(r.events) == 0 {
			continue
		}
		if r.label == "" {
			r.label = "tid " + r.tid
		}
		if len(pids) > 1 {
			p := procs[r.pid]
			if p == "" {
				p = "pid " + r.pid
			}
			r.label = p + ": " + r.label
		}
		r.pair()
		kept = append(kept, r)
	}
	slices.SortStableFunc(kept, func(a, b *srow) int {
		if c := cmp.Compare(a.pid, b.pid); c != 0 && len(pids) > 1 {
			return c
		}
		if c := cmp.Compare(a.sort, b.sort); c != 0 {
			return c
		}
		return cmp.Compare(a.first, b.first)
	})
	return kept
}

// pair turns the row's events into spans: B with the matching E (by
// nesting, in time order), X as they are.
func (r *srow) pair() {
	slices.SortStableFunc(r.events, func(a, b sevent) int { return cmp.Compare(a.Ts, b.Ts) })
	var open []sevent
	for _, e := range r.events {
		switch e.Ph {
		case "B":
			open = append(open, e)
		case "E":
			if len(open) == 0 {
				continue
			}
			b := open[len(open)-1]
			open = open[:len(open)-1]
			reason, _ := e.Args["reason"].(string)
			r.slices = append(r.slices, sspan{b.Ts, e.Ts, b.Name, reason})
		case "X":
			reason, _ := e.Args["reason"].(string)
			s := sspan{e.Ts, e.Ts + max(e.Dur, 0), e.Name, reason}
			switch {
			case e.Cat == "poll":
				if n, ok := e.Args["events"].(float64); ok {
					s.detail = strconv.FormatFloat(n, 'f', -1, 64) + " events"
				}
				r.polls = append(r.polls, s)
			case e.Dur <= 0:
				r.marks = append(r.marks, s)
			default:
				r.slices = append(r.slices, s)
			}
		case "i", "I":
			r.marks = append(r.marks, sspan{e.Ts, e.Ts, e.Name, ""})
		}
	}
	// A slice never ended is drawn to the row's last event.
	if len(open) > 0 {
		last := r.events[len(r.events)-1].Ts
		for _, b := range open {
			r.slices = append(r.slices, sspan{b.Ts, last, b.Name, "not ended"})
		}
	}
	for _, ss := range [][]sspan{r.slices, r.polls, r.marks} {
		slices.SortStableFunc(ss, func(a, b sspan) int { return cmp.Compare(a.start, b.start) })
	}
}

// timeline maps trace time to the picture.
type timeline struct {
	t0, t1       float64 // µs
	left, right  float64 // px
	pxPerMicro   float64
	microsPerPix float64
}

func (tl timeline) x(t float64) float64 { return tl.left + (t-tl.t0)*tl.pxPerMicro }

// drawTimeline writes the picture's body to b and returns its height.
func drawTimeline(b *strings.Builder, rows []*srow, opt SVGOptions) int {
	tl := timeline{t0: math.Inf(1), t1: math.Inf(-1), left: svgLabelW, right: float64(opt.Width - svgMarginR)}
	nslices := 0
	for _, r := range rows {
		for _, ss := range [][]sspan{r.slices, r.polls, r.marks} {
			for _, s := range ss {
				tl.t0, tl.t1 = min(tl.t0, s.start), max(tl.t1, s.end)
			}
		}
		nslices += len(r.slices)
	}
	if len(rows) == 0 {
		tl.t0, tl.t1 = 0, 1
	}
	if tl.t1 <= tl.t0 {
		tl.t1 = tl.t0 + 1
	}
	tl.pxPerMicro = (tl.right - tl.left) / (tl.t1 - tl.t0)
	tl.microsPerPix = 1 / tl.pxPerMicro

	fmt.Fprintf(b, `<rect width="%d" height="100%%" fill="white"/>`+"\n", opt.Width)
	svgText(b, 16, 28, 18, "start", "bold", opt.Title)
	sub := fmt.Sprintf("%d tracks, %d slices over %s; hover over a mark for details", len(rows), nslices, fmtMicros(tl.t1-tl.t0))
	if len(rows) == 0 {
		sub = "no events"
	}
	svgText(b, 16, 48, 12, "start", "", sub)

	names := legendNames(rows)
	colour := map[string]string{}
	for _, n := range names {
		colour[n] = nameColour(n)
	}
	y := float64(svgTop)
	for i, r := range rows {
		if i%2 == 1 {
			fmt.Fprintf(b, `<rect x="0" y="%.1f" width="%d" height="%d" fill="#f4f6f8"/>`+"\n", y-svgRowGap/2, opt.Width, svgRowH+svgRowGap)
		}
		svgText(b, svgLabelW-8, y+svgRowH/2+4, 12, "end", "", r.label)
		drawSlices(b, tl, y, r.slices, colour)
		drawPolls(b, tl, y+svgRowH-svgPollH, r.polls)
		drawMarks(b, tl, y, r.marks)
		y += svgRowH + svgRowGap
	}
	y = drawAxis(b, tl, y)
	return int(math.Ceil(drawLegend(b, names, colour, y+16, float64(opt.Width))))
}

// legendNames returns the names of the slices, each once, in the order
// they first appear in time (rows in order for ties).
func legendNames(rows []*srow) []string {
	type first struct {
		t    float64
		row  int
		name string
	}
	at := map[string]int{} // name → its index in fs
	var fs []first
	for i, r := range rows {
		for _, s := range r.slices {
			j, ok := at[s.name]
			if !ok {
				at[s.name] = len(fs)
				fs = append(fs, first{s.start, i, s.name})
			} else if s.start < fs[j].t { // keep the earliest
				fs[j].t, fs[j].row = s.start, i
			}
		}
	}
	slices.SortStableFunc(fs, func(a, b first) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.row, b.row)
	})
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return names
}

// drawSlices draws a row's slices, merging runs of slices narrower than
// a pixel.
func drawSlices(b *strings.Builder, tl timeline, y float64, ss []sspan, colour map[string]string) {
	var run []sspan // narrow slices that start within a pixel of run[0]
	flush := func() {
		switch len(run) {
		case 0:
			return
		case 1:
			s := run[0]
			sliceRect(b, tl, y, s.start, s.end, colour[s.name], sliceTip(s))
		default:
			end := run[0].end
			share := map[string]float64{}
			var order []string
			for _, s := range run {
				end = max(end, s.end)
				if _, ok := share[s.name]; !ok {
					order = append(order, s.name)
				}
				share[s.name] += s.end - s.start
			}
			slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(share[b], share[a]) })
			var tip strings.Builder
			fmt.Fprintf(&tip, "%d slices in %s:", len(run), fmtMicros(end-run[0].start))
			for i, n := range order {
				if i == 4 {
					fmt.Fprintf(&tip, " and %d more", len(order)-4)
					break
				}
				fmt.Fprintf(&tip, " %s %s", n, fmtMicros(share[n]))
				if i < len(order)-1 && i < 3 {
					tip.WriteByte(',')
				}
			}
			sliceRect(b, tl, y, run[0].start, end, colour[order[0]], tip.String())
		}
		run = run[:0]
	}
	for _, s := range ss {
		if (s.end-s.start)*tl.pxPerMicro >= 1 {
			flush()
			sliceRect(b, tl, y, s.start, s.end, colour[s.name], sliceTip(s))
			continue
		}
		if len(run) > 0 && (s.start-run[0].start)*tl.pxPerMicro >= 1 {
			flush()
		}
		run = append(run, s)
	}
	flush()
}

// sliceRect draws one slice rectangle, at least a pixel wide; one wide
// enough has a white edge, so that neighbours stay apart.
func sliceRect(b *strings.Builder, tl timeline, y, start, end float64, fill, tip string) {
	x0, w := tl.x(start), max(tl.x(end)-tl.x(start), 1)
	edge := ""
	if w >= 4 {
		edge = ` stroke="white" stroke-width="0.75"`
	}
	fmt.Fprintf(b, `<rect x="%.2f" y="%.1f" width="%.2f" height="%d" fill="%s"%s><title>%s</title></rect>`+"\n",
		x0, y, w, svgRowH-svgPollH-1, fill, edge, xmlEscape(tip))
}

func sliceTip(s sspan) string {
	tip := s.name + ": " + fmtMicros(s.end-s.start)
	if s.detail != "" {
		tip += ", then " + s.detail
	}
	return tip
}

// drawPolls draws polls as a thin bar, merging those within a pixel.
func drawPolls(b *strings.Builder, tl timeline, y float64, ps []sspan) {
	for i := 0; i < len(ps); {
		start, end, n := ps[i].start, ps[i].end, 0
		j := i
		for ; j < len(ps) && (ps[j].start-end)*tl.pxPerMicro < 1; j++ {
			end = max(end, ps[j].end)
			n++
		}
		tip := ps[i].name + ": " + fmtMicros(ps[i].end-ps[i].start)
		if ps[i].detail != "" {
			tip += ", " + ps[i].detail
		}
		if n > 1 {
			tip = fmt.Sprintf("%d polls in %s", n, fmtMicros(end-start))
		}
		x0 := tl.x(start)
		fmt.Fprintf(b, `<rect x="%.2f" y="%.1f" width="%.2f" height="%d" fill="#2d3748"><title>%s</title></rect>`+"\n",
			x0, y, max(tl.x(end)-x0, 1), svgPollH, xmlEscape(tip))
		i = j
	}
}

// drawMarks draws instants as ticks at the top of the row, one per pixel.
func drawMarks(b *strings.Builder, tl timeline, y float64, ms []sspan) {
	for i := 0; i < len(ms); {
		j := i
		counts := map[string]int{}
		var order []string
		for ; j < len(ms) && (ms[j].start-ms[i].start)*tl.pxPerMicro < 1; j++ {
			if counts[ms[j].name] == 0 {
				order = append(order, ms[j].name)
			}
			counts[ms[j].name]++
		}
		var tip []string
		for _, n := range order {
			if counts[n] > 1 {
				tip = append(tip, fmt.Sprintf("%s ×%d", n, counts[n]))
			} else {
				tip = append(tip, n)
			}
		}
		x := tl.x(ms[i].start)
		fmt.Fprintf(b, `<rect x="%.2f" y="%.1f" width="1" height="%d" fill="#1a202c"><title>%s at %s</title></rect>`+"\n",
			x, y-svgTickH/2, svgTickH, xmlEscape(strings.Join(tip, ", ")), fmtMicros(ms[i].start-tl.t0))
		i = j
	}
}

// drawAxis draws the time axis under the rows, at y, and returns the y
// below its labels. Ticks are at round times from the first event.
func drawAxis(b *strings.Builder, tl timeline, y float64) float64 {
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", tl.left, y, tl.right, y)
	span := tl.t1 - tl.t0
	step := niceStep(span / 8)
	for k := 0.0; k*step <= span*(1+1e-9); k++ {
		x := tl.x(tl.t0 + k*step)
		fmt.Fprintf(b, `<line x1="%.2f" y1="%.1f" x2="%.2f" y2="%.1f" stroke="black"/>`+"\n", x, y, x, y+5)
		svgText(b, x, y+18, 11, "middle", "", fmtMicros(k*step))
	}
	svgText(b, (tl.left+tl.right)/2, y+36, 12, "middle", "", "time from the first event")
	return y + 44
}

// niceStep returns the least of 1, 2 and 5 times a power of ten that is
// at least rough.
func niceStep(rough float64) float64 {
	if rough <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(rough)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= rough*(1-1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}

// drawLegend lists every name with its colour, in rows from y, and
// returns the picture's height below it.
func drawLegend(b *strings.Builder, names []string, colour map[string]string, y, width float64) float64 {
	if len(names) == 0 {
		return y
	}
	svgText(b, 16, y+12, 12, "start", "bold", "tasks")
	x, ly := 70.0, y
	for _, n := range names {
		w := 24 + 6.5*float64(len(n)) + 18
		if x+w > width-10 && x > 70 {
			x, ly = 70, ly+20
		}
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="14" height="14" fill="%s"><title>%s</title></rect>`+"\n", x, ly, colour[n], xmlEscape(n))
		svgText(b, x+20, ly+12, 12, "start", "", n)
		x += w
	}
	return ly + 30
}

// nameColour returns a colour for a slice name: always the same for the
// same name, from a hash of it, mid-light so that black text and the dark
// poll bar stay visible.
func nameColour(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	hue := float64(v % 360)
	sat := 0.50 + float64(v>>9%25)/100
	light := 0.48 + float64(v>>17%16)/100
	r, g, bl := hslToRGB(hue, sat, light)
	return fmt.Sprintf("#%02x%02x%02x", r, g, bl)
}

// hslToRGB converts a hue (degrees), saturation and lightness (0..1).
func hslToRGB(h, s, l float64) (r, g, b uint8) {
	c := (1 - math.Abs(2*l-1)) * s
	hp := h / 60
	x := c * (1 - math.Abs(math.Mod(hp, 2)-1))
	var r1, g1, b1 float64
	switch {
	case hp < 1:
		r1, g1 = c, x
	case hp < 2:
		r1, g1 = x, c
	case hp < 3:
		g1, b1 = c, x
	case hp < 4:
		g1, b1 = x, c
	case hp < 5:
		r1, b1 = x, c
	default:
		r1, b1 = c, x
	}
	m := l - c/2
	to := func(v float64) uint8 { return uint8(math.Round((v + m) * 255)) }
	return to(r1), to(g1), to(b1)
}

// fmtMicros formats a duration in µs with a unit that suits it: 850 ns,
// 12.5 µs, 3.2 ms, 1.25 s.
func fmtMicros(us float64) string {
	a := math.Abs(us)
	var v float64
	var unit string
	switch {
	case a == 0:
		return "0"
	case a < 1:
		v, unit = us*1e3, "ns"
	case a < 1e3:
		v, unit = us, "µs"
	case a < 1e6:
		v, unit = us/1e3, "ms"
	default:
		v, unit = us/1e6, "s"
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) + " " + unit
}

// svgText writes a text element with escaped content.
func svgText(b *strings.Builder, x, y float64, size int, anchor, weight, s string) {
	w := ""
	if weight != "" {
		w = ` font-weight="` + weight + `"`
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s"%s>%s</text>`+"\n", x, y, size, anchor, w, xmlEscape(s))
}

// xmlEscape escapes s for XML character data; characters XML does not
// allow become U+FFFD.
func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
