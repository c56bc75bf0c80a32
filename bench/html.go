package bench

// html.go renders a Report as one self-contained HTML page (seckill bench
// --html). The page must open from a file, offline, years later, and be
// read by someone who has never seen a flash sale load test: so there are no
// external scripts, fonts or stylesheets, no JavaScript at all, and every
// chart is inline SVG computed here, on the server side, with a sentence
// under it saying how to read it.
//
// The code is split in three layers:
//   - a view model (htmlPage, htmlStep, …) of already formatted strings, so
//     the template holds no logic beyond loops and conditionals;
//   - chart builders that turn data into SVG primitives (svgChart) through
//     a linear scale with "nice" ticks (svgScale);
//   - one html/template, which escapes every string it prints (problem
//     strings come from the system under test and may contain anything).
//
// Identifiers carry an html/svg prefix because other files of this package
// are written independently and must not collide with these helpers.

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// WriteHTML renders r as a single self-contained HTML page: verdict and
// configuration, ratios against the baselines, a per-step summary, charts
// (latency over time, funnel, throughput per step) and per-outcome latency.
func WriteHTML(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("bench: WriteHTML: nil report")
	}
	return htmlTemplate.Execute(w, buildHTMLPage(r))
}

// ---------------------------------------------------------------------------
// View model

type htmlPage struct {
	Machine, Started string
	OK               bool
	Problems         []string
	Config           []htmlKV
	HasRatios        bool
	Ratios           []htmlRatioRow
	Baselines        []htmlBaselineRow // nil: not measured
	Steps            []htmlStep
	Throughput       *svgChart     // nil without steps
	Cost             []htmlCostRow // nil: not counted
	AOF              []htmlAOFRow  // nil: --redis-aof not used
}

// htmlAOFRow is one Redis persistence setting measured by --redis-aof.
type htmlAOFRow struct{ Mode, PerSecond, Spread, P50, P99, Relative string }

func htmlAOFRows(m map[string]AOFResult) []htmlAOFRow {
	var rows []htmlAOFRow
	base := m["no"].PerSecond
	for _, mode := range AOFModes {
		x, ok := m[mode]
		if !ok {
			continue
		}
		rel := "—"
		if base > 0 {
			rel = htmlNum(x.PerSecond/base, 2)
		}
		rows = append(rows, htmlAOFRow{Mode: mode, PerSecond: htmlRate(x.PerSecond), Spread: htmlNum(x.PerSecondSpread, 2),
			P50: htmlMs(x.P50), P99: htmlMs(x.P99), Relative: rel})
	}
	return rows
}

// htmlCostRow is one order path's cost in Temporal.
type htmlCostRow struct{ Path, Actions, Events, Sampled, ByKind string }

func htmlCostRows(t *TemporalCost) []htmlCostRow {
	if t == nil {
		return nil
	}
	var rows []htmlCostRow
	for _, path := range []string{pathPaid, pathTimeout, pathCancel} {
		a, ok := t.ActionsPerOrder[path]
		if !ok {
			continue
		}
		kinds := make([]string, 0, len(t.ActionsByKind[path]))
		for k, v := range t.ActionsByKind[path] {
			kinds = append(kinds, fmt.Sprintf("%s %.3g", k, v))
		}
		sort.Strings(kinds)
		rows = append(rows, htmlCostRow{Path: path, Actions: fmt.Sprintf("%.2f", a),
			Events: fmt.Sprintf("%.1f", t.EventsPerOrder[path]), Sampled: fmt.Sprint(t.Sampled[path]),
			ByKind: strings.Join(kinds, ", ")})
	}
	return rows
}

type htmlKV struct{ Key, Value, Help string }

type htmlRatioRow struct {
	Name, Meaning, Value, Target string
	Spread                       string // (max − min) / median over the rounds; "—" with one round
	Status                       string // "met", "missed" or "absent"
}

type htmlBaselineRow struct{ Name, Value, Unit, Meaning string }

type htmlStep struct {
	N                                    int
	Load                                 string
	Requests, Duration                   string
	Throughput, SoldOutThroughput        string
	SellOut, AllWaitPay, OrdersPerSecond string
	AcceptedP99                          string
	OK                                   bool
	Latency                              *svgChart // nil: empty timeline
	Funnel                               *svgChart
	Outcomes                             []htmlOutcomeRow
	Reconcile                            []htmlKV
}

type htmlOutcomeRow struct{ Name, Code, Count, P50, P95, P99, Max string }

func buildHTMLPage(r *Report) htmlPage {
	p := htmlPage{
		Machine:    htmlOrDash(r.Machine),
		Started:    htmlTime(r.StartedAt),
		OK:         r.InvariantsOK,
		Problems:   r.Problems,
		Config:     htmlConfigRows(r.Config),
		HasRatios:  len(r.Ratios) > 0,
		Ratios:     htmlRatioRows(r.Ratios, r.RatiosSpread),
		Baselines:  htmlBaselineRows(r.Baselines),
		Throughput: throughputChart(r.Steps, r.Baselines),
		Cost:       htmlCostRows(r.Temporal),
		AOF:        htmlAOFRows(r.RedisAOF),
	}
	p.Config = append(p.Config, htmlKV{"CPU pinning", pinningWords(r.CPUPinning), "--pin: the API and Redis on one CPU, Temporal, the worker and MySQL on the other (taskset)"})
	if len(r.Repeats) > 1 {
		p.Config = append(p.Config, htmlKV{"Rounds", htmlInt(len(r.Repeats)) + ", interleaved", "--repeat: baselines then steps, each round; ratios are medians over the rounds"})
	}
	for i, s := range r.Steps {
		p.Steps = append(p.Steps, buildHTMLStep(i+1, s))
	}
	return p
}

func htmlConfigRows(c Settings) []htmlKV {
	load := "closed loop, " + htmlInt(c.Concurrency) + " requests in flight"
	if c.Rate > 0 {
		load = "open loop, " + htmlInt(c.Rate) + " requests/s"
	}
	if len(c.Steps) > 0 {
		// With --steps the load is the step's, not the single-run setting.
		load = strings.SplitN(load, ",", 2)[0] + ", stepped (see Steps)"
	}
	return []htmlKV{
		{"API", htmlOrDash(c.BaseURL), "the running stack that was loaded"},
		{"Shoppers", htmlInt(c.Users), "simulated users, each with its own JWT"},
		{"Requests per shopper", htmlInt(c.PerUser), "orders each shopper sends"},
		{"Load", load, "closed loop: a fixed number of requests in flight; open loop: a fixed arrival rate"},
		{"Stock", htmlInt(c.Stock), "units on sale in each step's fresh session"},
		{"Units per order", htmlInt(c.Quantity), ""},
		{"Per-user limit", htmlInt(c.Limit), "units one shopper may win"},
		{"Pay ratio", htmlPercent(c.PayRatio), "share of accepted orders the bench pays"},
		{"Pay timeout", htmlOrDash(c.PayTimeout), "unpaid orders close after this"},
	}
}

// htmlRatioSpecs are the targets the design promises; the order is the
// order of the request path (admission, fast path, order creation).
var htmlRatioSpecs = []struct {
	key, name, meaning string
	target             float64
}{
	{"admission_vs_fiber", "Admission vs bare Fiber", "burst throughput of the real order route against a no-op Fiber handler on the same machine", 0.5},
	{"soldout_vs_fiber", "Sold-out vs bare Fiber", "once sold out, rejections come from memory and should be nearly as cheap as a no-op handler", 0.85},
	{"orders_vs_temporal_noop", "Orders vs Temporal no-op", "orders reaching WAIT_PAY per second against no-op workflows per second: order creation should be bound by Temporal itself", 0.9},
}

func htmlRatioRows(ratios, spread map[string]float64) []htmlRatioRow {
	var rows []htmlRatioRow
	known := map[string]bool{}
	for _, spec := range htmlRatioSpecs {
		known[spec.key] = true
		row := htmlRatioRow{Name: spec.name, Meaning: spec.meaning, Value: "—",
			Target: "≥ " + htmlNum(spec.target, 2), Status: "absent", Spread: "—"}
		if sp, ok := spread[spec.key]; ok {
			row.Spread = htmlNum(sp, 2)
		}
		if v, ok := ratios[spec.key]; ok {
			row.Value = htmlNum(v, 2)
			row.Status = "missed"
			if v >= spec.target { // NaN compares false: a NaN ratio is never "met"
				row.Status = "met"
			}
		}
		rows = append(rows, row)
	}
	// Ratios this page does not know about yet are still shown, without a target.
	var extra []string
	for k := range ratios {
		if !known[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		row := htmlRatioRow{Name: k, Value: htmlNum(ratios[k], 2), Target: "—", Status: "absent", Spread: "—"}
		if sp, ok := spread[k]; ok {
			row.Spread = htmlNum(sp, 2)
		}
		rows = append(rows, row)
	}
	return rows
}

func htmlBaselineRows(b *Baselines) []htmlBaselineRow {
	if b == nil {
		return nil
	}
	return []htmlBaselineRow{
		{"Bare Fiber handler", htmlRate(b.FiberRPS), "req/s", "a no-op handler answering the same JSON under the same load: the ceiling for any route here"},
		{"Admission script alone", htmlRate(b.LuaPerSecond), "calls/s", "the Redis admission Lua script called directly through go-redis at the same concurrency"},
		{"Temporal no-op workflow", htmlRate(b.TemporalNoopPerSecond), "workflows/s", "no-op workflows with one local activity, started and completed on the same Temporal server"},
	}
}

func buildHTMLStep(n int, s Step) htmlStep {
	v := htmlStep{
		N:                 n,
		Load:              htmlLoad(s),
		Requests:          htmlInt(s.Funnel.Requests),
		Duration:          htmlSeconds(s.DurationSeconds),
		Throughput:        htmlRate(s.Throughput),
		SoldOutThroughput: htmlRate(s.SoldOutThroughput),
		SellOut:           htmlSeconds(s.TimeToSellOutSeconds),
		AllWaitPay:        htmlSeconds(s.TimeToAllWaitPaySeconds),
		OrdersPerSecond:   htmlRate(s.OrdersPerSecond),
		AcceptedP99:       "—",
		OK:                s.InvariantsOK,
		Latency:           latencyChart(n, s),
		Funnel:            funnelChart(n, s.Funnel),
		Outcomes:          htmlOutcomeRows(s.Latency),
		Reconcile:         htmlReconcileRows(s.Reconcile),
	}
	if p, ok := s.Latency["accepted"]; ok && p.Count > 0 {
		v.AcceptedP99 = htmlMs(p.P99)
	}
	return v
}

// htmlLoad names a step's load level; closed and open loop read differently.
func htmlLoad(s Step) string {
	if s.Rate > 0 {
		return htmlInt(s.Rate) + " req/s"
	}
	return htmlInt(s.Concurrency) + " in flight"
}

// htmlOutcomeNames explains the outcome codes of Step.Latency, in the order
// a request meets them from the happy path outwards.
var htmlOutcomeNames = []struct{ code, name string }{
	{"accepted", "Accepted"},
	{"soldout_memory", "Sold out (fast path)"},
	{"soldout_redis", "Sold out (Redis)"},
	{"limit", "Per-user limit exceeded"},
	{"rate_limited", "Rate limited"},
	{"window", "Outside the sale window"},
	{"error", "Other errors"},
}

func htmlOutcomeRows(lat map[string]Percentiles) []htmlOutcomeRow {
	var codes []string
	named := map[string]string{}
	for _, o := range htmlOutcomeNames {
		named[o.code] = o.name
		if _, ok := lat[o.code]; ok {
			codes = append(codes, o.code)
		}
	}
	var extra []string
	for k := range lat {
		if _, ok := named[k]; !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	codes = append(codes, extra...)

	rows := make([]htmlOutcomeRow, 0, len(codes))
	for _, c := range codes {
		p := lat[c]
		name := named[c]
		if name == "" {
			name = c
		}
		rows = append(rows, htmlOutcomeRow{Name: name, Code: c, Count: htmlInt(p.Count),
			P50: htmlMs(p.P50), P95: htmlMs(p.P95), P99: htmlMs(p.P99), Max: htmlMs(p.Max)})
	}
	return rows
}

func htmlReconcileRows(m map[string]any) []htmlKV {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // map order is random; the page must be reproducible
	rows := make([]htmlKV, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, htmlKV{Key: k, Value: htmlAny(m[k])})
	}
	return rows
}

// ---------------------------------------------------------------------------
// Formatting. Every number on the page goes through one of these, so that
// NaN or ±Inf (a division by a zero duration upstream) prints as a dash
// instead of leaking into the text or, worse, into SVG attributes.

func htmlFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// htmlNum formats v with the given decimals and thousands separators.
func htmlNum(v float64, decimals int) string {
	if !htmlFinite(v) {
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

func htmlInt(n int) string { return htmlNum(float64(n), 0) }

// htmlRate formats a per-second figure: whole numbers once they are large
// enough that decimals are noise.
func htmlRate(v float64) string {
	if htmlFinite(v) && v != 0 && math.Abs(v) < 100 {
		return htmlNum(v, 1)
	}
	return htmlNum(v, 0)
}

// htmlMs keeps about three significant digits of a latency in milliseconds.
func htmlMs(v float64) string {
	switch a := math.Abs(v); {
	case !htmlFinite(v):
		return "—"
	case a < 10:
		return htmlNum(v, 2)
	case a < 100:
		return htmlNum(v, 1)
	default:
		return htmlNum(v, 0)
	}
}

// htmlSeconds prints a duration; zero means "not reached or not measured"
// (a step that never sold out has no time to sell out), shown as a dash.
func htmlSeconds(v float64) string {
	if !htmlFinite(v) || v <= 0 {
		return "—"
	}
	if v >= 100 {
		return htmlNum(v, 0) + " s"
	}
	return htmlNum(v, 2) + " s"
}

// htmlPercent formats a fraction (0.123 → "12.3%"). A share too small to
// show is "<0.1%", not "0.0%": three errors in 10,000 requests are not none.
func htmlPercent(f float64) string {
	switch p := f * 100; {
	case p == 0:
		return "0%"
	case htmlFinite(p) && math.Abs(p) < 0.1:
		return "<0.1%"
	case htmlFinite(p) && math.Abs(p) < 10:
		return htmlNum(p, 1) + "%"
	default:
		return htmlNum(p, 0) + "%"
	}
}

func htmlAny(v any) string {
	switch x := v.(type) {
	case float64: // what encoding/json decodes every number to
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return htmlNum(x, 0)
		}
		return htmlNum(x, 3)
	case float32:
		return htmlAny(float64(x))
	case nil:
		return "—"
	default:
		return fmt.Sprint(x)
	}
}

func htmlOrDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

func htmlTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

// ---------------------------------------------------------------------------
// SVG primitives. Charts are lists of shapes in drawing order (grid, bars,
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
	if !htmlFinite(v) {
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

// ---------------------------------------------------------------------------
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
	if !htmlFinite(lo) {
		lo = 0
	}
	if !htmlFinite(hi) {
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
	if !htmlFinite(step) || !htmlFinite(lo) || !htmlFinite(hi) || hi <= lo {
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
	if !htmlFinite(raw) || raw <= 0 {
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
	if !htmlFinite(v) {
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
	return htmlNum(v, decimals)
}

// LabelWidth is the width of the widest tick label, to size the margin.
func (s svgScale) LabelWidth() float64 {
	w := 0.0
	for _, v := range s.Ticks() {
		w = math.Max(w, svgTextWidth(s.Label(v)))
	}
	return w
}

// ---------------------------------------------------------------------------
// Charts

// bucketSeconds is the width of a Timeline bucket.
const bucketSeconds = 0.1

// latencyChart plots one step's burst over time: p50 and p99 latency as
// lines on the left axis and requests (with the accepted ones) per bucket as
// light bars on the right axis, plus a marker where the stock ran out. The
// moment of selling out is where the request mix changes from "hits Redis"
// to "rejected from memory", and latency should visibly drop there.
func latencyChart(n int, s Step) *svgChart {
	tl := s.Timeline
	if len(tl) == 0 {
		return nil
	}
	const height = 320.0
	c := &svgChart{Kind: "latency", Title: fmt.Sprintf("Step %d: latency and requests over time", n), Width: svgWidth, Height: height}

	var maxT, maxMs float64
	maxReq := 0
	for _, b := range tl {
		maxT = math.Max(maxT, svgOr0(b.AtSeconds)+bucketSeconds)
		maxMs = math.Max(maxMs, math.Max(svgOr0(b.P50), svgOr0(b.P99)))
		maxReq = max(maxReq, b.Requests)
	}
	plot := svgBox{Top: 48, Bottom: height - 50}
	y := newSVGScale(0, maxMs, plot.Bottom, plot.Top, 5)
	yReq := newSVGCountScale(maxReq, plot.Bottom, plot.Top, 5)
	// Margins fit the widest tick label plus the rotated axis title.
	plot.Left, plot.Right = 36+y.LabelWidth(), svgWidth-36-yReq.LabelWidth()
	x := newSVGScale(0, maxT, plot.Left, plot.Right, int((plot.Right-plot.Left)/70))

	c.yAxis(y, plot, false, "latency (ms)")
	c.yAxis(yReq, plot, true, "requests per 100 ms")
	c.xAxis(x, plot, "seconds since the burst started")

	for _, b := range tl {
		at := svgOr0(b.AtSeconds)
		x0, x1 := x.At(at), x.At(at+bucketSeconds)
		w := math.Max(x1-x0-1, 0.5) // a 1-unit gap keeps neighbouring bars apart
		tip := fmt.Sprintf("%s s: %s requests, %s accepted, p50 %s ms, p99 %s ms",
			htmlNum(at, 1), htmlInt(b.Requests), htmlInt(b.Accepted), htmlMs(b.P50), htmlMs(b.P99))
		if b.Requests > 0 {
			yr := yReq.At(float64(b.Requests))
			c.Rects = append(c.Rects, svgRect{X: x0 + 0.5, Y: yr, W: w, H: plot.Bottom - yr, Class: "b-req", Title: tip})
		}
		if b.Accepted > 0 {
			ya := yReq.At(float64(b.Accepted))
			c.Rects = append(c.Rects, svgRect{X: x0 + 0.5, Y: ya, W: w, H: plot.Bottom - ya, Class: "b-acc", Title: tip})
		}
	}
	c.Paths = append(c.Paths,
		svgPath{D: svgLinePath(tl, x, y, func(b Bucket) float64 { return b.P50 }), Class: "l-p50"},
		svgPath{D: svgLinePath(tl, x, y, func(b Bucket) float64 { return b.P99 }), Class: "l-p99"},
	)

	if t := s.TimeToSellOutSeconds; htmlFinite(t) && t > 0 && t <= x.Hi {
		mx := x.At(t)
		c.Lines = append(c.Lines, svgLine{mx, plot.Top, mx, plot.Bottom, "marker"})
		// The label is centred on the marker but kept inside the chart when
		// the stock ran out right at the start or the end of the burst.
		label := "sold out at " + htmlSeconds(t)
		half := svgTextWidth(label) / 2
		lx := math.Min(math.Max(mx, half+4), svgWidth-half-4)
		c.text(svgText{X: lx, Y: plot.Top - 6, Text: label, Class: "marker-label", Anchor: "middle"})
	}
	c.legend(plot.Left, 20,
		svgLegendItem{Label: "p50 latency", Class: "l-p50", Line: true},
		svgLegendItem{Label: "p99 latency", Class: "l-p99", Line: true},
		svgLegendItem{Label: "requests per 100 ms", Class: "b-req"},
		svgLegendItem{Label: "accepted per 100 ms", Class: "b-acc"},
	)
	return c
}

// svgLinePath draws a series through the middle of each bucket. A bucket
// without requests has no latency (its p50 is 0, not "fast"), so the line
// breaks there instead of diving to zero.
func svgLinePath(tl []Bucket, x, y svgScale, value func(Bucket) float64) string {
	var b strings.Builder
	pen := false
	for _, bk := range tl {
		v := value(bk)
		if bk.Requests == 0 || !htmlFinite(v) {
			pen = false
			continue
		}
		cmd := "L"
		if !pen {
			cmd = "M"
		}
		fmt.Fprintf(&b, "%s%s %s ", cmd, svgCoord(x.At(svgOr0(bk.AtSeconds)+bucketSeconds/2)), svgCoord(y.At(v)))
		pen = true
	}
	return strings.TrimSpace(b.String())
}

func svgOr0(v float64) float64 {
	if !htmlFinite(v) {
		return 0
	}
	return v
}

// htmlFunnelRow is one bar of the funnel. OfAccepted rows (the order
// lifecycle) are shares of accepted requests, the others shares of all.
type htmlFunnelRow struct {
	Label      string
	Count      int
	Class      string
	OfAccepted bool
}

// htmlFunnelRows lists where requests ended, then what became of the
// accepted ones. Tests rely on this order.
func htmlFunnelRows(f Funnel) []htmlFunnelRow {
	return []htmlFunnelRow{
		{"Requests sent", f.Requests, "f-total", false},
		{"Rate limited", f.RateLimited, "f-reject", false},
		{"Outside the sale window", f.Window, "f-reject", false},
		{"Sold out (fast path)", f.SoldOutMemory, "f-reject", false},
		{"Sold out (Redis)", f.SoldOutRedis, "f-reject", false},
		{"Per-user limit exceeded", f.LimitExceeded, "f-reject", false},
		{"Other errors", f.OtherErrors, "f-error", false},
		{"Accepted", f.Accepted, "f-win", false},
		{"Orders created (WAIT_PAY)", f.OrdersCreated, "f-win", true},
		{"Paid", f.Paid, "f-paid", true},
		{"Closed (unpaid)", f.Closed, "f-closed", true},
	}
}

// funnelChart draws one horizontal bar per funnel row on a shared scale,
// with the count written on the bar (or just past it when the bar is too
// short for the text), followed by its share.
func funnelChart(n int, f Funnel) *svgChart {
	rows := htmlFunnelRows(f)
	const rowH, barH, labelW = 26.0, 18.0, 200.0
	plot := svgBox{Left: labelW, Top: 10, Right: svgWidth - 140}
	plot.Bottom = plot.Top + rowH*float64(len(rows))
	c := &svgChart{Kind: "funnel", Title: fmt.Sprintf("Step %d: where the requests ended", n), Width: svgWidth, Height: plot.Bottom + 48}

	maxCount := 0
	for _, r := range rows {
		maxCount = max(maxCount, r.Count)
	}
	x := newSVGCountScale(maxCount, plot.Left, plot.Right, int((plot.Right-plot.Left)/90))
	for _, v := range x.Ticks() {
		c.Grid = append(c.Grid, svgLine{x.At(v), plot.Top, x.At(v), plot.Bottom, "grid"})
	}
	c.xAxis(x, plot, "requests")

	for i, r := range rows {
		top := plot.Top + rowH*float64(i) + (rowH-barH)/2
		base := top + barH/2 + 4 // text baseline, vertically centred on the bar
		c.text(svgText{X: plot.Left - 10, Y: base, Text: r.Label, Class: "row-label", Anchor: "end"})

		w := x.At(float64(r.Count)) - plot.Left
		if r.Count > 0 {
			w = math.Max(w, 2) // a non-zero count stays visible
		} else {
			w = 0
		}
		c.Rects = append(c.Rects, svgRect{X: plot.Left, Y: top, W: w, H: barH, Class: r.Class,
			Title: r.Label + ": " + htmlInt(r.Count)})

		count, share := htmlInt(r.Count), htmlFunnelShare(r, f)
		t := svgText{Y: base, Text: count, Sub: share, Class: "count"}
		if need := svgTextWidth(count+share) + 16; w >= need {
			t.X, t.Anchor = plot.Left+w-8, "end"
		} else {
			t.X, t.Anchor = plot.Left+w+6, "start"
		}
		c.text(t)
	}
	return c
}

// htmlFunnelShare is the " (12.3%)" after a count; empty for the first row
// (always 100%) and when the denominator is zero.
func htmlFunnelShare(r htmlFunnelRow, f Funnel) string {
	den, suffix := f.Requests, ""
	if r.OfAccepted {
		den, suffix = f.Accepted, " of accepted"
	}
	if r.Class == "f-total" || den <= 0 {
		return ""
	}
	return " (" + htmlPercent(float64(r.Count)/float64(den)) + suffix + ")"
}

// throughputChart compares the steps: burst throughput and sold-out
// throughput side by side, against the bare Fiber baseline (a dashed line)
// when it was measured. Bars that approach the line mean the order route
// costs little more than a no-op handler.
func throughputChart(steps []Step, b *Baselines) *svgChart {
	if len(steps) == 0 {
		return nil
	}
	const height = 340.0
	c := &svgChart{Kind: "throughput", Title: "Throughput per step", Width: svgWidth, Height: height}

	maxV, fiber := 0.0, 0.0
	for _, s := range steps {
		maxV = math.Max(maxV, math.Max(svgOr0(s.Throughput), svgOr0(s.SoldOutThroughput)))
	}
	if b != nil && htmlFinite(b.FiberRPS) && b.FiberRPS > 0 {
		fiber = b.FiberRPS
		maxV = math.Max(maxV, fiber)
	}
	plot := svgBox{Top: 48, Right: svgWidth - 24, Bottom: height - 56}
	// 8% headroom keeps the value written above the tallest bar inside the plot.
	y := newSVGScale(0, maxV*1.08, plot.Bottom, plot.Top, 5)
	plot.Left = 40 + y.LabelWidth()
	c.yAxis(y, plot, false, "requests per second")
	c.Lines = append(c.Lines, svgLine{plot.Left, plot.Bottom, plot.Right, plot.Bottom, "axis"})

	groupW := (plot.Right - plot.Left) / float64(len(steps))
	barW := math.Min(groupW*0.32, 90)
	for i, s := range steps {
		cx := plot.Left + groupW*(float64(i)+0.5)
		c.throughputBar(cx-barW-2, barW, y, plot, s.Throughput, "t-burst", fmt.Sprintf("Step %d burst", i+1))
		c.throughputBar(cx+2, barW, y, plot, s.SoldOutThroughput, "t-soldout", fmt.Sprintf("Step %d sold out", i+1))
		c.text(svgText{X: cx, Y: plot.Bottom + 19, Text: fmt.Sprintf("Step %d", i+1), Class: "tick strong", Anchor: "middle"})
		c.text(svgText{X: cx, Y: plot.Bottom + 35, Text: htmlLoad(s), Class: "tick", Anchor: "middle"})
	}
	items := []svgLegendItem{
		{Label: "burst throughput (req/s)", Class: "t-burst"},
		{Label: "sold-out throughput (req/s)", Class: "t-soldout"},
	}
	if fiber > 0 {
		fy := y.At(fiber)
		c.Lines = append(c.Lines, svgLine{plot.Left, fy, plot.Right, fy, "baseline"})
		c.text(svgText{X: plot.Right - 4, Y: fy - 6, Text: "bare Fiber: " + htmlRate(fiber) + " req/s", Class: "baseline-label", Anchor: "end"})
		items = append(items, svgLegendItem{Label: "bare Fiber baseline", Class: "baseline", Line: true})
	}
	c.legend(plot.Left, 20, items...)
	return c
}

// throughputBar draws one vertical bar with its value above it, when the
// bar is wide enough for the text (many steps make narrow bars; the
// summary table has the figures anyway).
func (c *svgChart) throughputBar(x0, w float64, y svgScale, plot svgBox, v float64, class, name string) {
	top := y.At(svgOr0(v))
	c.Rects = append(c.Rects, svgRect{X: x0, Y: top, W: w, H: plot.Bottom - top, Class: class, Title: name + ": " + htmlRate(v) + " req/s"})
	if label := htmlRate(v); svgTextWidth(label) <= w+8 {
		c.text(svgText{X: x0 + w/2, Y: top - 6, Text: label, Class: "value", Anchor: "middle"})
	}
}

// ---------------------------------------------------------------------------
// Template

var htmlTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"n": svgCoord}).Parse(htmlPageTemplate))

const htmlPageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>seckill bench: {{if .OK}}PASS{{else}}FAIL{{end}}, {{.Started}}</title>
<style>
:root { --ink: #0f172a; --muted: #475569; --line: #e2e8f0; --pass: #15803d; --fail: #b91c1c; }
* { box-sizing: border-box; }
body { margin: 0; background: #f1f5f9; color: var(--ink);
  font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1140px; margin: 0 auto; padding: 20px 24px 40px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 16px 20px; margin: 16px 0; }
h1 { font-size: 24px; margin: 0 0 2px; }
h2 { font-size: 18px; margin: 0 0 6px; }
h3 { font-size: 15px; margin: 18px 0 4px; }
p { margin: 4px 0 10px; }
.help { color: var(--muted); max-width: 90ch; }
.meta { color: var(--muted); margin-bottom: 12px; }
.top { display: flex; justify-content: space-between; align-items: flex-start; gap: 24px; }
.verdict { text-align: center; min-width: 200px; }
.badge { display: inline-block; font-size: 44px; font-weight: 800; letter-spacing: .08em; line-height: 1;
  padding: 14px 30px; border-radius: 12px; color: #fff; }
.badge.pass { background: var(--pass); }
.badge.fail { background: var(--fail); }
.verdict .help { margin-top: 8px; font-size: 13px; }
.config { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 6px 20px; margin: 0; }
.config div { border-left: 3px solid var(--line); padding-left: 8px; }
.config dt { font-size: 12px; color: var(--muted); }
.config dd { margin: 0; font-weight: 600; overflow-wrap: anywhere; }
.problems { background: #fef2f2; border: 1px solid #fecaca; border-radius: 8px; padding: 10px 14px; margin-top: 14px; }
.problems h2 { color: var(--fail); font-size: 16px; }
.problems ul { margin: 0; padding-left: 20px; }
.problems li { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 13px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { font-size: 12px; color: var(--muted); font-weight: 600; background: #f8fafc; }
.num { text-align: right; white-space: nowrap; }
.met, .ok { color: var(--pass); font-weight: 700; }
.missed, .bad { color: var(--fail); font-weight: 700; }
td.met, td.missed, td.absent { white-space: nowrap; }
td code { display: block; }
.absent, .none { color: var(--muted); }
code { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; color: var(--muted); }
.cols { display: grid; grid-template-columns: repeat(auto-fit, minmax(460px, 1fr)); gap: 8px 24px; }
.step { border-top: 1px solid var(--line); margin-top: 16px; padding-top: 4px; }
details { margin-top: 8px; color: var(--muted); }
details table { width: auto; }
svg.chart { display: block; width: 100%; height: auto; margin: 4px 0 2px; }
svg.chart text { font-size: 12px; fill: #334155; }
svg.chart .tick { fill: #475569; }
svg.chart .strong { font-weight: 700; fill: var(--ink); }
svg.chart .axis-title { font-weight: 600; }
svg.chart .row-label { fill: var(--ink); }
svg.chart .count { font-weight: 700; fill: var(--ink); }
svg.chart .count tspan { font-weight: 400; fill: #475569; }
svg.chart .value { font-weight: 600; fill: var(--ink); }
svg.chart .axis { stroke: #94a3b8; stroke-width: 1; }
svg.chart .grid { stroke: #e2e8f0; stroke-width: 1; }
svg.chart .l-p50, svg.chart .l-p99 { fill: none; stroke-width: 2.25; stroke-linejoin: round; stroke-linecap: round; }
svg.chart .l-p50 { stroke: #2563eb; }
svg.chart .l-p99 { stroke: #ea580c; }
svg.chart .b-req { fill: #cbd5e1; }
svg.chart .b-acc { fill: #4ade80; }
svg.chart .marker { stroke: #334155; stroke-width: 1.25; stroke-dasharray: 4 3; }
svg.chart .marker-label { font-weight: 600; fill: #334155; }
svg.chart .f-total { fill: #94a3b8; }
svg.chart .f-reject { fill: #fcd34d; }
svg.chart .f-error { fill: #fca5a5; }
svg.chart .f-win { fill: #86efac; }
svg.chart .f-paid { fill: #4ade80; }
svg.chart .f-closed { fill: #d6d3d1; }
svg.chart .t-burst { fill: #2563eb; }
svg.chart .t-soldout { fill: #93c5fd; }
svg.chart .baseline { stroke: var(--ink); stroke-width: 1.5; stroke-dasharray: 7 4; }
svg.chart .baseline-label { font-weight: 600; fill: var(--ink); }
.empty { color: var(--muted); font-style: italic; }
</style>
</head>
<body>
<main>

<section class="header">
<div class="top">
<div>
<h1>Flash-sale load test</h1>
<div class="meta">Machine: <b>{{.Machine}}</b> · started {{.Started}}</div>
<p class="help">Each step sells a fresh session of the same stock to many simulated shoppers at once, then sends the
same burst again once it is sold out. The bench follows every winner to <code>WAIT_PAY</code>, pays some of them, lets
the rest time out, and checks the invariants (nothing oversold, MySQL and Redis agree).</p>
<dl class="config">
{{range .Config}}<div{{with .Help}} title="{{.}}"{{end}}><dt>{{.Key}}</dt><dd>{{.Value}}</dd></div>
{{end}}</dl>
</div>
<div class="verdict">
{{if .OK}}<div id="verdict" class="badge pass">PASS</div>
<p class="help">every invariant held in every step</p>
{{else}}<div id="verdict" class="badge fail">FAIL</div>
<p class="help">at least one invariant was broken: the numbers below describe a system that lost correctness</p>
{{end}}</div>
</div>
{{if .Problems}}<div class="problems">
<h2>Problems</h2>
<ul>
{{range .Problems}}<li>{{.}}</li>
{{end}}</ul>
</div>
{{end}}</section>

<section id="ratios">
<h2>Against the physical limits</h2>
<p class="help">The baselines run on the same machine in the same run, so the ratios hold across machines where raw
requests per second do not. A ratio at or above its target means the design costs what it was meant to.</p>
{{if .HasRatios}}<table>
<tr><th>Ratio</th><th>What it compares</th><th class="num">Value</th><th class="num">Spread</th><th class="num">Target</th><th>Met?</th></tr>
{{range .Ratios}}<tr><td><b>{{.Name}}</b></td><td>{{.Meaning}}</td><td class="num">{{.Value}}</td><td class="num">{{.Spread}}</td><td class="num">{{.Target}}</td>
<td class="{{.Status}}">{{if eq .Status "met"}}✓ met{{else if eq .Status "missed"}}✗ missed{{else}}not measured{{end}}</td></tr>
{{end}}</table>
{{else}}<p class="empty">No ratios: the run had no baselines (run with --baselines).</p>
{{end}}
<h3>Baselines</h3>
{{if .Baselines}}<table>
<tr><th>Baseline</th><th class="num">Measured</th><th>Unit</th><th>What it is</th></tr>
{{range .Baselines}}<tr><td><b>{{.Name}}</b></td><td class="num">{{.Value}}</td><td>{{.Unit}}</td><td>{{.Meaning}}</td></tr>
{{end}}</table>
{{else}}<p class="empty">Not measured.</p>
{{end}}
{{if .AOF}}<h3>Redis persistence</h3>
<p class="help">The admission script against a private redis-server per persistence setting, interleaved in the same run
(--redis-aof). Medians over the rounds; the spread is that of calls/s. A shared machine makes these noisy: compare
the settings with each other, not with another run.</p>
<table>
<tr><th>appendfsync</th><th class="num">Calls/s</th><th class="num">Spread</th><th class="num">p50</th><th class="num">p99</th><th class="num">vs no persistence</th></tr>
{{range .AOF}}<tr><td><b>{{.Mode}}</b></td><td class="num">{{.PerSecond}}</td><td class="num">{{.Spread}}</td><td class="num">{{.P50}}</td><td class="num">{{.P99}}</td><td class="num">{{.Relative}}</td></tr>
{{end}}</table>
{{end}}
<h3>Temporal cost per order</h3>
<p class="help">Temporal Cloud's billable actions and the history events of one order, per path, counted from the
real histories of the sampled orders (docs/temporal-actions.md says what each action buys).</p>
{{if .Cost}}<table>
<tr><th>Path</th><th class="num">Actions</th><th class="num">Events</th><th class="num">Orders</th><th>Actions by kind</th></tr>
{{range .Cost}}<tr><td><b>{{.Path}}</b></td><td class="num">{{.Actions}}</td><td class="num">{{.Events}}</td><td class="num">{{.Sampled}}</td><td>{{.ByKind}}</td></tr>
{{end}}</table>
{{else}}<p class="empty">Not counted (run with --cost-sample and a reachable Temporal).</p>
{{end}}</section>

<section id="steps">
<h2>Steps</h2>
{{if .Steps}}<p class="help">One row per load level. Throughput is requests per second during the burst; sold-out
throughput is the same burst against the sold-out session, served from memory. Orders/s is accepted orders divided by
the time until all of them were <code>WAIT_PAY</code>. A dash means not reached or not measured.</p>
<table>
<tr><th>Step</th><th>Load</th><th class="num">Requests</th><th class="num">Burst</th><th class="num">Throughput<br>req/s</th>
<th class="num">Sold-out<br>req/s</th><th class="num">Time to<br>sell out</th><th class="num">Until all<br>WAIT_PAY</th>
<th class="num">Orders/s</th><th class="num">Accepted<br>p99 ms</th><th>Invariants</th></tr>
{{range .Steps}}<tr><td>{{.N}}</td><td>{{.Load}}</td><td class="num">{{.Requests}}</td><td class="num">{{.Duration}}</td>
<td class="num"><b>{{.Throughput}}</b></td><td class="num">{{.SoldOutThroughput}}</td><td class="num">{{.SellOut}}</td>
<td class="num">{{.AllWaitPay}}</td><td class="num">{{.OrdersPerSecond}}</td><td class="num">{{.AcceptedP99}}</td>
<td>{{if .OK}}<span class="ok">✓ ok</span>{{else}}<span class="bad">✗ broken</span>{{end}}</td></tr>
{{end}}</table>
{{else}}<p class="empty">No steps were run.</p>
{{end}}</section>

<section id="charts">
<h2>Charts</h2>
<h3>Throughput per step</h3>
{{with .Throughput}}<p class="help">Dark bars: the sale itself; light bars: the same burst after selling out. The
dashed line is a bare Fiber handler on this machine, the most any route could do.</p>
{{template "chart" .}}
{{else}}<p class="empty">No steps, nothing to chart.</p>
{{end}}
{{range .Steps}}<div class="step">
<h3>Step {{.N}}: {{.Load}}</h3>
<p class="help">Latency of the requests answered in each 100 ms of the burst (lines, left axis) and how many there were
(bars, right axis). Latency usually drops once the stock is gone and rejections come from memory.</p>
{{with .Latency}}{{template "chart" .}}{{else}}<p class="empty">No timeline was recorded for this step.</p>{{end}}
<p class="help">Where each request ended, then what became of the accepted ones (percentages of all requests, or
of accepted orders where stated).</p>
{{template "chart" .Funnel}}
{{if .Reconcile}}<details><summary>Reconcile report</summary>
<table>{{range .Reconcile}}<tr><td><code>{{.Key}}</code></td><td class="num">{{.Value}}</td></tr>{{end}}</table>
</details>
{{end}}</div>
{{end}}</section>

<section id="latency">
<h2>Latency by outcome</h2>
{{if .Steps}}<p class="help">Milliseconds from sending a request to its answer, split by how it ended: a fast
rejection and a winning order take very different paths.</p>
<div class="cols">
{{range .Steps}}<div>
<h3>Step {{.N}}: {{.Load}}</h3>
{{if .Outcomes}}<table>
<tr><th>Outcome</th><th class="num">Count</th><th class="num">p50</th><th class="num">p95</th><th class="num">p99</th><th class="num">Max</th></tr>
{{range .Outcomes}}<tr><td>{{.Name}} <code>{{.Code}}</code></td><td class="num">{{.Count}}</td><td class="num">{{.P50}}</td>
<td class="num">{{.P95}}</td><td class="num">{{.P99}}</td><td class="num">{{.Max}}</td></tr>
{{end}}</table>
{{else}}<p class="empty">No latencies recorded.</p>
{{end}}</div>
{{end}}</div>
{{else}}<p class="empty">No steps were run.</p>
{{end}}</section>

</main>
</body>
</html>
{{define "chart"}}<svg class="chart" data-chart="{{.Kind}}" viewBox="0 0 {{n .Width}} {{n .Height}}" role="img" aria-label="{{.Title}}">
<title>{{.Title}}</title>
{{range .Grid}}<line class="{{.Class}}" x1="{{n .X1}}" y1="{{n .Y1}}" x2="{{n .X2}}" y2="{{n .Y2}}"/>
{{end}}{{range .Rects}}<rect class="{{.Class}}" x="{{n .X}}" y="{{n .Y}}" width="{{n .W}}" height="{{n .H}}">{{with .Title}}<title>{{.}}</title>{{end}}</rect>
{{end}}{{range .Paths}}{{if .D}}<path class="{{.Class}}" d="{{.D}}"/>
{{end}}{{end}}{{range .Lines}}<line class="{{.Class}}" x1="{{n .X1}}" y1="{{n .Y1}}" x2="{{n .X2}}" y2="{{n .Y2}}"/>
{{end}}{{range .Texts}}<text class="{{.Class}}" x="{{n .X}}" y="{{n .Y}}" text-anchor="{{.Anchor}}"{{if .Rotate}} transform="rotate(-90 {{n .X}} {{n .Y}})"{{end}}>{{.Text}}{{with .Sub}}<tspan>{{.}}</tspan>{{end}}</text>
{{end}}</svg>{{end}}`
