package cpubound

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// fmtCount formats a rate as a whole number with thousands separators.
func fmtCount(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// fmtSI formats v with three significant digits and a k, M or G suffix.
func fmtSI(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return trimZeros(v/1e9) + "G"
	case a >= 1e6:
		return trimZeros(v/1e6) + "M"
	case a >= 1e3:
		return trimZeros(v/1e3) + "k"
	}
	return trimZeros(v)
}

// trimZeros formats v with three significant digits (at most one decimal
// place below 100).
func trimZeros(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// fmtDur formats a duration in µs, ms or s with three significant digits.
func fmtDur(d time.Duration) string {
	a := d
	if a < 0 {
		a = -a
	}
	switch {
	case a < time.Millisecond:
		return trimZeros(float64(d)/1e3) + "µs"
	case a < time.Second:
		return trimZeros(float64(d)/1e6) + "ms"
	}
	return trimZeros(d.Seconds()) + "s"
}

// fmtDelta formats a duration with an explicit sign.
func fmtDelta(d time.Duration) string {
	if d >= 0 {
		return "+" + fmtDur(d)
	}
	return fmtDur(d)
}

// verdict is PASS or MISS.
func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// fmtRatio formats a ratio as 0.95x, or with three significant digits
// below 0.1 (0.00109x), so that a collapse does not print as zero.
func fmtRatio(r float64) string {
	if r > 0 && r < 0.1 {
		return strconv.FormatFloat(r, 'g', 3, 64) + "x"
	}
	return fmt.Sprintf("%.2fx", r)
}
