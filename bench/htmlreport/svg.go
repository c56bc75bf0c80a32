package htmlreport

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// The chart kit: SVG primitives. Charts are lists of shapes in drawing order (grid, bars,
// lines, overlays, text) rendered by one template, so each builder only
// does arithmetic and never writes markup.

type svgChart struct {
	Kind          string // data-chart attribute: what the chart is, for tests and readers
	Title         string // accessible name and tooltip
	Width, Height float64
	Grid          []svgLine
	Rects         []svgRect
	Paths         []svgPath
	Lines         []svgLine // axes, markers and baselines, drawn over the data
	Texts         []svgText
}

type svgLine struct {
	X1, Y1, X2, Y2 float64
	Class          string
}

type svgRect struct {
	X, Y, W, H float64
	Class      string
	Title      string // tooltip with the exact figures
}

type svgPath struct{ D, Class string }

type svgText struct {
	X, Y   float64
	Text   string
	Sub    string // secondary text in a lighter tspan, e.g. a share
	Class  string
	Anchor string // start, middle or end
	Rotate bool   // vertical axis titles
}

// svgBox is a chart's plot area in SVG user units.
type svgBox struct{ Left, Top, Right, Bottom float64 }

const (
	svgWidth    = 960.0 // the viewBox width of every chart; CSS scales it to the page
	svgFontSize = 12.0
)

// svgTextWidth estimates the rendered width of s. There is no font metrics
// server side; 0.62 em per character is a safe upper bound for digits in the
// common sans-serif fonts, which is what the labels mostly are.
func svgTextWidth(s string) float64 {
	return float64(utf8.RuneCountInString(s)) * svgFontSize * 0.62
}

// svgCoord formats a coordinate for an SVG attribute. A non-finite value
// would make the browser drop the shape (or the whole path), so it becomes 0;
// the scales below already keep it from happening.
func svgCoord(v float64) string {
	if !finite(v) {
		return "0"
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

func (c *svgChart) text(t svgText) { c.Texts = append(c.Texts, t) }

// svgLegendItem is one entry of a legend: a filled swatch, or a line
// (Line) in the style of the series it names.
type svgLegendItem struct {
	Label, Class string
	Line         bool
}

// legend lays items out left to right from (x, y), y being the text baseline.
func (c *svgChart) legend(x, y float64, items ...svgLegendItem) {
	for _, it := range items {
		if it.Line {
			c.Lines = append(c.Lines, svgLine{x, y - 4, x + 20, y - 4, it.Class})
		} else {
			c.Rects = append(c.Rects, svgRect{X: x + 4, Y: y - 10, W: 12, H: 12, Class: it.Class})
		}
		c.text(svgText{X: x + 26, Y: y, Text: it.Label, Class: "legend", Anchor: "start"})
		x += 26 + svgTextWidth(it.Label) + 22
	}
}

// xAxis draws the axis line, ticks and labels below the plot, and a title.
func (c *svgChart) xAxis(s svgScale, plot svgBox, title string) {
	c.Lines = append(c.Lines, svgLine{plot.Left, plot.Bottom, plot.Right, plot.Bottom, "axis"})
	for _, v := range s.Ticks() {
		x := s.At(v)
		c.Lines = append(c.Lines, svgLine{x, plot.Bottom, x, plot.Bottom + 5, "axis"})
		c.text(svgText{X: x, Y: plot.Bottom + 19, Text: s.Label(v), Class: "tick", Anchor: "middle"})
	}
	if title != "" {
		c.text(svgText{X: (plot.Left + plot.Right) / 2, Y: plot.Bottom + 38, Text: title, Class: "axis-title", Anchor: "middle"})
	}
}

// yAxis draws a vertical axis on the left or right edge of the plot. Only
// the main (left) axis draws grid lines: a second set from the right axis
// would not line up with the first and read as noise.
func (c *svgChart) yAxis(s svgScale, plot svgBox, right bool, title string) {
	x, dx, anchor, titleX := plot.Left, -8.0, "end", 16.0
	if right {
		x, dx, anchor, titleX = plot.Right, 8.0, "start", c.Width-16
	}
	c.Lines = append(c.Lines, svgLine{x, plot.Top, x, plot.Bottom, "axis"})
	for _, v := range s.Ticks() {
		y := s.At(v)
		if !right {
			c.Grid = append(c.Grid, svgLine{plot.Left, y, plot.Right, y, "grid"})
		}
		c.text(svgText{X: x + dx, Y: y + 4, Text: s.Label(v), Class: "tick", Anchor: anchor})
	}
	if title != "" {
		c.text(svgText{X: titleX, Y: (plot.Top + plot.Bottom) / 2, Text: title, Class: "axis-title", Anchor: "middle", Rotate: true})
	}
}

// Linear scale with nice ticks

// svgScale maps a data domain linearly onto a pixel range. The domain is
// widened to round bounds at a 1-2-5 step so that tick labels read 0, 50,
// 100 rather than 0, 47.3, 94.6, and the top tick sits at or above the
// largest value.
type svgScale struct {
	Lo, Hi   float64 // data domain after rounding; Hi > Lo always
	From, To float64 // pixel range; To < From for a y axis (SVG y grows downwards)
	Step     float64 // distance between ticks
}

// newSVGScale covers [lo, hi] with at most about maxTicks intervals. Empty
// or degenerate data (no values, all zero, NaN) still yields a valid scale
// of [0, 1], so that no caller ever divides by a zero span.
func newSVGScale(lo, hi, from, to float64, maxTicks int) svgScale {
	if !finite(lo) {
		lo = 0
	}
	if !finite(hi) {
		hi = 0
	}
	if lo > hi {
		lo, hi = hi, lo
	}
	if hi == lo {
		hi = lo + 1 // a flat series still needs an axis
	}
	if maxTicks < 1 {
		maxTicks = 1
	}
	step := svgNiceStep((hi - lo) / float64(maxTicks))
	lo, hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
	if !finite(step) || !finite(lo) || !finite(hi) || hi <= lo {
		lo, hi, step = 0, 1, 0.2 // absurd magnitudes: fall back rather than emit Inf
	}
	return svgScale{Lo: lo, Hi: hi, From: from, To: to, Step: step}
}

// newSVGCountScale is newSVGScale for whole numbers (requests, orders): a
// tick at 0.2 requests would be meaningless, so the step is at least 1.
func newSVGCountScale(maxCount int, from, to float64, maxTicks int) svgScale {
	s := newSVGScale(0, float64(maxCount), from, to, maxTicks)
	if s.Step < 1 {
		// Here maxCount < maxTicks, so steps of 1 still fit.
		s.Lo, s.Hi, s.Step = 0, math.Max(1, math.Ceil(s.Hi)), 1
	}
	return s
}

// svgNiceStep rounds raw up to 1, 2 or 5 times a power of ten. Rounding up
// (never down) keeps the number of ticks at or below what was asked, which
// is what keeps their labels from overlapping.
func svgNiceStep(raw float64) float64 {
	if !finite(raw) || raw <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / mag; {
	case f <= 1:
		return mag
	case f <= 2:
		return 2 * mag
	case f <= 5:
		return 5 * mag
	default:
		return 10 * mag
	}
}

// At maps a data value to a pixel coordinate. NaN maps to the bottom of the
// domain so that a bad value can never produce a NaN coordinate.
func (s svgScale) At(v float64) float64 {
	if !finite(v) {
		v = s.Lo
	}
	return s.From + (v-s.Lo)/(s.Hi-s.Lo)*(s.To-s.From)
}

// Ticks returns the tick values from Lo to Hi. Each is computed as
// Lo + i*Step rather than by repeated addition, which would drift (0.30000000000000004).
func (s svgScale) Ticks() []float64 {
	n := int(math.Round((s.Hi - s.Lo) / s.Step))
	if n < 1 || n > 100 {
		n = 1
	}
	ticks := make([]float64, 0, n+1)
	for i := 0; i <= n; i++ {
		ticks = append(ticks, s.Lo+float64(i)*s.Step)
	}
	return ticks
}

// Label formats a tick with just enough decimals for the step (0.5 → one).
func (s svgScale) Label(v float64) string {
	decimals := 0
	if s.Step < 1 {
		decimals = int(math.Ceil(-math.Log10(s.Step) - 1e-9))
	}
	return fmtNum(v, decimals)
}

// LabelWidth is the width of the widest tick label, to size the margin.
func (s svgScale) LabelWidth() float64 {
	w := 0.0
	for _, v := range s.Ticks() {
		w = math.Max(w, svgTextWidth(s.Label(v)))
	}
	return w
}
