package htmlreport

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Formatting. Every number on the page goes through one of these, so that
// NaN or ±Inf (a division by a zero duration upstream) prints as a dash
// instead of leaking into the text or, worse, into SVG attributes.

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// fmtNum formats v with the given decimals and thousands separators.
func fmtNum(v float64, decimals int) string {
	if !finite(v) {
		return "—"
	}
	s := strconv.FormatFloat(math.Abs(v), 'f', decimals, 64)
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	if v < 0 && strings.Trim(s, "0.") != "" { // no "-0"
		b.WriteByte('-')
	}
	for i, d := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if hasFrac {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

func fmtInt(n int) string { return fmtNum(float64(n), 0) }

// fmtRate formats a per-second figure: whole numbers once they are large
// enough that decimals are noise.
func fmtRate(v float64) string {
	if finite(v) && v != 0 && math.Abs(v) < 100 {
		return fmtNum(v, 1)
	}
	return fmtNum(v, 0)
}

// fmtMs keeps about three significant digits of a latency in milliseconds.
func fmtMs(v float64) string {
	switch a := math.Abs(v); {
	case !finite(v):
		return "—"
	case a < 10:
		return fmtNum(v, 2)
	case a < 100:
		return fmtNum(v, 1)
	default:
		return fmtNum(v, 0)
	}
}

// fmtSeconds prints a duration; zero means "not reached or not measured"
// (a step that never sold out has no time to sell out), shown as a dash.
func fmtSeconds(v float64) string {
	if !finite(v) || v <= 0 {
		return "—"
	}
	if v >= 100 {
		return fmtNum(v, 0) + " s"
	}
	return fmtNum(v, 2) + " s"
}

// fmtPercent formats a fraction (0.123 → "12.3%"). A share too small to
// show is "<0.1%", not "0.0%": three errors in 10,000 requests are not none.
func fmtPercent(f float64) string {
	switch p := f * 100; {
	case p == 0:
		return "0%"
	case finite(p) && math.Abs(p) < 0.1:
		return "<0.1%"
	case finite(p) && math.Abs(p) < 10:
		return fmtNum(p, 1) + "%"
	default:
		return fmtNum(p, 0) + "%"
	}
}

func fmtAny(v any) string {
	switch x := v.(type) {
	case float64: // what encoding/json decodes every number to
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return fmtNum(x, 0)
		}
		return fmtNum(x, 3)
	case float32:
		return fmtAny(float64(x))
	case nil:
		return "—"
	default:
		return fmt.Sprint(x)
	}
}

func fmtOrDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Format("2006-01-02 15:04:05 MST")
}
