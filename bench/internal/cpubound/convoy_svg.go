package cpubound

import (
	"encoding/xml"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// chartSeries is one set of bars in the chart: a value per k (missing k
// have no bar), and for measured series the spread over the repetitions
// as whiskers.
type chartSeries struct {
	name   string
	fill   string
	dashed bool // a reference drawn in outline
	values map[int]float64
	spread map[int][2]float64 // k → the least and most of a repetition
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH = 1000, 600
	plotL, plotR   = 90, 830
	plotT, plotB   = 96, 470
	legendY        = 560 // baseline of the legend's first row
)

// convoySVG draws the median req/s by k at N=1 (or the smallest N
// measured) as grouped bars, one per variant (all holds each variant's
// rows), with whiskers from the least to the most of a repetition, with
// CPython's threaded figures as a reference series and its other-process
// figure as a line, on a log axis.
func convoySVG(cfg *convoyConfig, all [][]row) string {
	n := cfg.conns[0]
	title := "Echo server requests/s beside k CPU-bound workers, N=1 connection"
	if n != 1 {
		title = fmt.Sprintf("Echo server requests/s beside k CPU-bound workers, N=%d connections (N=1 was not measured)", n)
	}
	colours := map[string]string{"tasks": "#2b6cb0", "offload": "#2f855a", "go": "#dd6b20"}
	var series []chartSeries
	for _, rs := range all {
		if len(rs) == 0 {
			continue
		}
		v := rs[0].v
		s := chartSeries{name: v.short, fill: colours[v.key], values: map[int]float64{}, spread: map[int][2]float64{}}
		for _, r := range rs {
			if r.conns == n && r.measured() {
				s.values[r.k] = r.rate
				s.spread[r.k] = [2]float64{r.rateLo, r.rateHi}
			}
		}
		series = append(series, s)
	}
	series = append(series, chartSeries{name: "CPython 3.11 threads (reference)", fill: "#cbd5e0", dashed: true, values: cpythonRate})

	lo, hi := logRange(cfg.ks, series)
	y := func(v float64) float64 {
		if v <= 0 {
			return plotB // zero has no place on a log axis: the floor
		}
		f := (math.Log10(v) - math.Log10(lo)) / (math.Log10(hi) - math.Log10(lo))
		return plotB - f*(plotB-plotT)
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n",
		chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	text(&b, 24, 34, 18, "start", "bold", title)
	text(&b, 24, 58, 12, "start", "", fmt.Sprintf("bench convoy: %s, NumCPU=%d, switch interval %v, %v counted per case; log scale",
		runtime.Version(), runtime.NumCPU(), cfg.interval, cfg.duration))
	text(&b, 24, 76, 12, "start", "", fmt.Sprintf("bars: the median of %d interleaved repetition(s); whiskers: the least and the most of a repetition",
		cfg.reps))

	// The y axis: a labelled grid line at each power of ten, lighter ones
	// at 2 and 5 times it.
	for p := lo; p <= hi*1.0001; p *= 10 {
		yp := y(p)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#a0aec0" stroke-width="1"/>`+"\n", plotL, yp, plotR, yp)
		text(&b, plotL-8, yp+4, 12, "end", "", tickLabel(p))
		for _, m := range []float64{2, 5} {
			if p*m < hi {
				fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e2e8f0" stroke-width="1"/>`+"\n", plotL, y(p*m), plotR, y(p*m))
				text(&b, plotL-8, y(p*m)+4, 10, "end", "", tickLabel(p*m))
			}
		}
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", plotL, plotT, plotL, plotB)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", plotL, plotB, plotR, plotB)
	fmt.Fprintf(&b, `<text x="24" y="%d" font-size="13" text-anchor="middle" transform="rotate(-90 24 %d)">requests/s (log scale)</text>`+"\n",
		(plotT+plotB)/2, (plotT+plotB)/2)
	text(&b, (plotL+plotR)/2, plotB+46, 13, "middle", "", "k: CPU-bound workers beside the echo server")

	// The bars, grouped by k.
	groupW := float64(plotR-plotL) / float64(len(cfg.ks))
	barW := groupW * 0.84 / float64(len(series))
	for g, k := range cfg.ks {
		x0 := float64(plotL) + float64(g)*groupW + groupW*0.08
		text(&b, x0+groupW*0.42, plotB+20, 13, "middle", "", fmt.Sprintf("k = %d", k))
		for i, s := range series {
			x := x0 + float64(i)*barW
			v, ok := s.values[k]
			if !ok || v <= 0 {
				if !s.dashed {
					text(&b, x+barW/2, plotB-4, 9, "middle", "", "n/a")
				}
				continue
			}
			top := y(v)
			stroke := ""
			if s.dashed {
				stroke = ` stroke="#4a5568" stroke-dasharray="4 3"`
			}
			tip := fmt.Sprintf("%s, k=%d: %s req/s", s.name, k, fmtCount(v))
			sp, whiskers := s.spread[k]
			if whiskers {
				tip += fmt.Sprintf(" (median; min..max %s..%s)", fmtCount(sp[0]), fmtCount(sp[1]))
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"%s><title>%s</title></rect>`+"\n",
				x+1, top, barW-2, plotB-top, s.fill, stroke, escape(tip))
			labelY := top
			if whiskers {
				cx, capW := x+barW/2, min(barW*0.3, 8)
				yl, yh := y(sp[0]), y(sp[1])
				fmt.Fprintf(&b, `<g stroke="#1a202c" stroke-width="1.2"><title>min..max: %s..%s</title>`+
					`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/></g>`+"\n",
					fmtCount(sp[0]), fmtCount(sp[1]),
					cx, yl, cx, yh, cx-capW, yl, cx+capW, yl, cx-capW, yh, cx+capW, yh)
				labelY = min(top, yh)
			}
			text(&b, x+barW/2, labelY-4, 10, "middle", "", barLabel(v))
		}
	}

	// CPython with its CPU work in another process: a line, labelled to the
	// right of the plot.
	yo := y(cpythonOtherProc)
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#718096" stroke-width="1.5" stroke-dasharray="8 4"/>`+"\n", plotL, yo, plotR, yo)
	text(&b, plotR+6, yo-3, 11, "start", "", "CPython, CPU work")
	text(&b, plotR+6, yo+11, 11, "start", "", "in another process: "+fmtSI(cpythonOtherProc))

	// The legend, in rows below the plot.
	x, ly := 24.0, float64(legendY)
	item := func(name string, swatch func(x, y float64)) {
		w := 24 + 7*float64(len(name)) + 20
		if x+w > chartW-10 {
			x, ly = 24, ly+24
		}
		swatch(x, ly-12)
		text(&b, x+24, ly, 12, "start", "", name)
		x += w
	}
	for _, s := range series {
		stroke := ""
		if s.dashed {
			stroke = ` stroke="#4a5568" stroke-dasharray="4 3"`
		}
		item(s.name, func(x, y float64) {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="16" height="16" fill="%s"%s/>`+"\n", x, y, s.fill, stroke)
		})
	}
	item("CPython, CPU work in another process", func(x, y float64) {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#718096" stroke-width="1.5" stroke-dasharray="8 4"/>`+"\n",
			x, y+8, x+16, y+8)
	})
	b.WriteString("</svg>\n")
	return b.String()
}

// logRange returns the powers of ten that enclose every value charted,
// whiskers included.
func logRange(ks []int, series []chartSeries) (lo, hi float64) {
	vals := []float64{cpythonOtherProc}
	for _, s := range series {
		for _, k := range ks {
			if v, ok := s.values[k]; ok && v > 0 {
				vals = append(vals, v)
			}
			for _, v := range s.spread[k] {
				if v > 0 {
					vals = append(vals, v)
				}
			}
		}
	}
	// Half the smallest value, so that even its bar has some height.
	lo = math.Pow(10, math.Floor(math.Log10(slices.Min(vals)/2)))
	hi = math.Pow(10, math.Ceil(math.Log10(slices.Max(vals))))
	if hi <= lo {
		hi = lo * 10
	}
	return lo, hi
}

// barLabel formats a bar's value: whole numbers below 1000, then 24.9k.
func barLabel(v float64) string {
	if v < 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return fmtSI(v)
}

// tickLabel formats an axis value: 100, 2k, 50k.
func tickLabel(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// text writes a text element with escaped content.
func text(b *strings.Builder, x, y float64, size int, anchor, weight, s string) {
	w := ""
	if weight != "" {
		w = fmt.Sprintf(` font-weight="%s"`, weight)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s"%s>%s</text>`+"\n", x, y, size, anchor, w, escape(s))
}

// escape escapes s for XML character data.
func escape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
