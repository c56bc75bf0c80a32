package htmlreport

import (
	"fmt"
	"math"
	"strings"

	"github.com/seckill/seckill/bench"
)

// The charts of the page, built from the report with the chart kit (svg.go).

// bucketSeconds is the width of a Timeline bucket.
const bucketSeconds = 0.1

// latencyChart plots one step's burst over time: p50 and p99 latency as
// lines on the left axis and requests (with the accepted ones) per bucket as
// light bars on the right axis, plus a marker where the stock ran out. The
// moment of selling out is where the request mix changes from "hits Redis"
// to "rejected from memory", and latency should visibly drop there.
func latencyChart(n int, s bench.Step) *svgChart {
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
			fmtNum(at, 1), fmtInt(b.Requests), fmtInt(b.Accepted), fmtMs(b.P50), fmtMs(b.P99))
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
		svgPath{D: svgLinePath(tl, x, y, func(b bench.Bucket) float64 { return b.P50 }), Class: "l-p50"},
		svgPath{D: svgLinePath(tl, x, y, func(b bench.Bucket) float64 { return b.P99 }), Class: "l-p99"},
	)

	if t := s.TimeToSellOutSeconds; finite(t) && t > 0 && t <= x.Hi {
		mx := x.At(t)
		c.Lines = append(c.Lines, svgLine{mx, plot.Top, mx, plot.Bottom, "marker"})
		// The label is centred on the marker but kept inside the chart when
		// the stock ran out right at the start or the end of the burst.
		label := "sold out at " + fmtSeconds(t)
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
func svgLinePath(tl []bench.Bucket, x, y svgScale, value func(bench.Bucket) float64) string {
	var b strings.Builder
	pen := false
	for _, bk := range tl {
		v := value(bk)
		if bk.Requests == 0 || !finite(v) {
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
	if !finite(v) {
		return 0
	}
	return v
}

// funnelRow is one bar of the funnel. OfAccepted rows (the order
// lifecycle) are shares of accepted requests, the others shares of all.
type funnelRow struct {
	Label      string
	Count      int
	Class      string
	OfAccepted bool
}

// funnelRows lists where requests ended, then what became of the
// accepted ones. Tests rely on this order.
func funnelRows(f bench.Funnel) []funnelRow {
	rows := []funnelRow{
		{"Requests sent", f.Requests, "f-total", false},
		{bench.OutcomeName(bench.OutRateLimited), f.RateLimited, "f-reject", false},
		{bench.OutcomeName(bench.OutWindow), f.Window, "f-reject", false},
	}
	if f.NotEligible > 0 { // a reserved sale's
		rows = append(rows, funnelRow{bench.OutcomeName(bench.OutNotEligible), f.NotEligible, "f-reject", false})
	}
	return append(rows, []funnelRow{
		{bench.OutcomeName(bench.OutSoldOutMemory), f.SoldOutMemory, "f-reject", false},
		{bench.OutcomeName(bench.OutSoldOutRedis), f.SoldOutRedis, "f-reject", false},
		{bench.OutcomeName(bench.OutLimit), f.LimitExceeded, "f-reject", false},
		{bench.OutcomeName(bench.OutError), f.OtherErrors, "f-error", false},
		{bench.OutcomeName(bench.OutAccepted), f.Accepted, "f-win", false},
		{"Orders created (WAIT_PAY)", f.OrdersCreated, "f-win", true},
		{"Paid", f.Paid, "f-paid", true},
		{"Closed (unpaid)", f.Closed, "f-closed", true},
	}...)
}

// funnelChart draws one horizontal bar per funnel row on a shared scale,
// with the count written on the bar (or just past it when the bar is too
// short for the text), followed by its share.
func funnelChart(n int, f bench.Funnel) *svgChart {
	rows := funnelRows(f)
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
			Title: r.Label + ": " + fmtInt(r.Count)})

		count, share := fmtInt(r.Count), funnelShare(r, f)
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

// funnelShare is the " (12.3%)" after a count; empty for the first row
// (always 100%) and when the denominator is zero.
func funnelShare(r funnelRow, f bench.Funnel) string {
	den, suffix := f.Requests, ""
	if r.OfAccepted {
		den, suffix = f.Accepted, " of accepted"
	}
	if r.Class == "f-total" || den <= 0 {
		return ""
	}
	return " (" + fmtPercent(float64(r.Count)/float64(den)) + suffix + ")"
}

// throughputChart compares the steps: burst throughput and sold-out
// throughput side by side, against the bare Fiber baseline (a dashed line)
// when it was measured. Bars that approach the line mean the order route
// costs little more than a no-op handler.
func throughputChart(steps []bench.Step, b *bench.Baselines) *svgChart {
	if len(steps) == 0 {
		return nil
	}
	const height = 340.0
	c := &svgChart{Kind: "throughput", Title: "Throughput per step", Width: svgWidth, Height: height}

	maxV, fiber := 0.0, 0.0
	for _, s := range steps {
		maxV = math.Max(maxV, math.Max(svgOr0(s.Throughput), svgOr0(s.SoldOutThroughput)))
	}
	if b != nil && finite(b.FiberRPS) && b.FiberRPS > 0 {
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
		c.text(svgText{X: cx, Y: plot.Bottom + 35, Text: loadLabel(s), Class: "tick", Anchor: "middle"})
	}
	items := []svgLegendItem{
		{Label: "burst throughput (req/s)", Class: "t-burst"},
		{Label: "sold-out throughput (req/s)", Class: "t-soldout"},
	}
	if fiber > 0 {
		fy := y.At(fiber)
		c.Lines = append(c.Lines, svgLine{plot.Left, fy, plot.Right, fy, "baseline"})
		c.text(svgText{X: plot.Right - 4, Y: fy - 6, Text: "bare Fiber: " + fmtRate(fiber) + " req/s", Class: "baseline-label", Anchor: "end"})
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
	c.Rects = append(c.Rects, svgRect{X: x0, Y: top, W: w, H: plot.Bottom - top, Class: class, Title: name + ": " + fmtRate(v) + " req/s"})
	if label := fmtRate(v); svgTextWidth(label) <= w+8 {
		c.text(svgText{X: x0 + w/2, Y: top - 6, Text: label, Class: "value", Anchor: "middle"})
	}
}
