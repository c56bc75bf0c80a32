package htmlreport

import (
	"bytes"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/bench"
)

// sampleHTMLReport is a plausible two-step run: 5,000 shoppers × 2
// requests against 500 units, closed loop at 128 then 512 in flight, with
// baselines, ratios (one of them missed) and 30-bucket timelines.
func sampleHTMLReport() *bench.Report {
	return &bench.Report{
		StartedAt: time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC),
		Machine:   "linux/amd64, 2 CPUs",
		Config: bench.Settings{BaseURL: "http://127.0.0.1:8080", Users: 5000, PerUser: 2, Concurrency: 128,
			Stock: 500, Quantity: 1, Limit: 1, PayRatio: 0.5, PayTimeout: "30s"},
		Steps: []bench.Step{
			{
				Concurrency: 128, SessionID: 41,
				Funnel: bench.Funnel{Requests: 10000, RateLimited: 37, Window: 0, SoldOutMemory: 8120, SoldOutRedis: 1290,
					LimitExceeded: 12, OtherErrors: 41, Accepted: 500, OrdersCreated: 500, Paid: 250, Closed: 250},
				DurationSeconds: 1.0961, Throughput: 9123.4, SoldOutThroughput: 14210.7,
				TimeToSellOutSeconds: 0.734, TimeToAllWaitPaySeconds: 2.31, OrdersPerSecond: 216.5,
				Latency: map[string]bench.Percentiles{
					"accepted":       {Count: 500, P50: 9.8, P95: 21.4, P99: 34.7, Max: 61.2},
					"soldout_memory": {Count: 8120, P50: 2.1, P95: 5.3, P99: 9.9, Max: 27.5},
					"soldout_redis":  {Count: 1290, P50: 8.7, P95: 18.2, P99: 29.3, Max: 48.0},
					"limit":          {Count: 12, P50: 7.9, P95: 12.3, P99: 13.1, Max: 13.1},
					"rate_limited":   {Count: 37, P50: 1.2, P95: 2.8, P99: 3.3, Max: 3.3},
					"error":          {Count: 41, P50: 103.5, P95: 240.1, P99: 251.0, Max: 251.0},
				},
				Timeline:     sampleHTMLTimeline(30, 330, 8, 12),
				Reconcile:    &seckill.Report{OK: true, TotalStock: 500, HeldQty: 250},
				InvariantsOK: true,
			},
			{
				Concurrency: 512, SessionID: 42,
				Funnel: bench.Funnel{Requests: 10000, RateLimited: 153, Window: 0, SoldOutMemory: 8840, SoldOutRedis: 471,
					LimitExceeded: 3, OtherErrors: 33, Accepted: 500, OrdersCreated: 498, Paid: 247, Closed: 251},
				DurationSeconds: 0.842, Throughput: 11876.2, SoldOutThroughput: 15033.9,
				TimeToSellOutSeconds: 0.41, TimeToAllWaitPaySeconds: 2.05, OrdersPerSecond: 243.9,
				Latency: map[string]bench.Percentiles{
					"accepted":       {Count: 500, P50: 31.2, P95: 70.4, P99: 98.6, Max: 140.3},
					"soldout_memory": {Count: 8840, P50: 6.4, P95: 17.0, P99: 28.8, Max: 66.1},
					"soldout_redis":  {Count: 471, P50: 27.5, P95: 55.9, P99: 80.2, Max: 101.7},
					"limit":          {Count: 3, P50: 22.0, P95: 24.1, P99: 24.1, Max: 24.1},
					"rate_limited":   {Count: 153, P50: 2.4, P95: 6.6, P99: 9.0, Max: 12.4},
					"error":          {Count: 33, P50: 180.2, P95: 402.7, P99: 450.9, Max: 450.9},
				},
				Timeline:     sampleHTMLTimeline(28, 360, 5, 40),
				InvariantsOK: true,
			},
		},
		Baselines: &bench.Baselines{FiberRPS: 17480.3, LuaPerSecond: 42115.8, TemporalNoopPerSecond: 329.6,
			AdmissionOnly: &bench.AdmissionOnly{RequestsPerSecond: 13020.7, AcceptedP50: 24.1, AcceptedP99: 61.3}},
		Ratios: map[string]float64{
			"admission_vs_fiber":      0.68,
			"soldout_vs_fiber":        0.86,
			"orders_vs_temporal_noop": 0.64,
			// An upper bound: met at 1.61 ≤ 1.3 is false, so missed.
			"accept_p99_vs_admission_only": 1.61,
			"accept_p50_vs_admission_only": 1.29,
		},
		InvariantsOK: true,
	}
}

// sampleHTMLTimeline makes n 100 ms buckets of about perBucket requests, the
// first soldAfter of them winning stock, latency rising with load (base ms)
// and one empty bucket near the end (a gap the lines must break at).
func sampleHTMLTimeline(n, perBucket, soldAfter int, base float64) []bench.Bucket {
	tl := make([]bench.Bucket, n)
	for i := range tl {
		b := bench.Bucket{AtSeconds: float64(i) / 10}
		if i != n-4 {
			b.Requests = perBucket + int(60*math.Sin(float64(i)/3))
			wave := 1 + 0.4*math.Sin(float64(i)/2)
			b.P50 = base * wave
			if i < soldAfter {
				b.Accepted = 500 / soldAfter
				b.P50 *= 1.8 // winners go through Redis and the relay
			}
			b.P99 = b.P50 * (2.6 + float64(i%5)/4)
		}
		tl[i] = b
	}
	return tl
}

func renderHTMLPage(t *testing.T, r *bench.Report) (string, *html.Node) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatalf("WriteHTML: %v", err)
	}
	page := buf.String()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatalf("the page does not parse as HTML: %v", err)
	}
	return page, doc
}

// checkHTMLWellFormed holds for every page: balanced <svg> tags, no script, no
// NaN or Inf anywhere, and every SVG coordinate a finite number with no
// negative width or height.
func checkHTMLWellFormed(t *testing.T, page string, doc *html.Node) {
	t.Helper()
	if open, closed := strings.Count(page, "<svg"), strings.Count(page, "</svg>"); open != closed {
		t.Errorf("unbalanced svg tags: %d <svg, %d </svg>", open, closed)
	}
	for _, bad := range []string{"NaN", "Inf"} {
		if i := strings.Index(page, bad); i >= 0 {
			t.Errorf("page contains %q: …%s…", bad, page[max(0, i-80):min(len(page), i+40)])
		}
	}
	if n := len(htmlFindAll(doc, func(n *html.Node) bool { return n.Data == "script" })); n != 0 {
		t.Errorf("page has %d <script> elements; it must work without JavaScript", n)
	}
	for _, n := range htmlFindAll(doc, func(n *html.Node) bool { return n.Type == html.ElementNode }) {
		for _, a := range n.Attr {
			switch a.Key {
			case "x", "y", "x1", "y1", "x2", "y2", "width", "height":
				if n.Data == "svg" {
					continue
				}
				v, err := strconv.ParseFloat(a.Val, 64)
				if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
					t.Errorf("<%s %s=%q>: not a finite number", n.Data, a.Key, a.Val)
				}
				if (a.Key == "width" || a.Key == "height") && v < 0 {
					t.Errorf("<%s %s=%q>: negative", n.Data, a.Key, a.Val)
				}
			case "d":
				for _, f := range strings.Fields(strings.NewReplacer("M", " ", "L", " ").Replace(a.Val)) {
					if v, err := strconv.ParseFloat(f, 64); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
						t.Errorf("path d=%q: %q is not a finite number", a.Val, f)
					}
				}
			}
		}
	}
}

func TestWriteHTMLRealistic(t *testing.T) {
	r := sampleHTMLReport()
	page, doc := renderHTMLPage(t, r)
	checkHTMLWellFormed(t, page, doc)

	if got := htmlVerdict(t, doc); got != "PASS" {
		t.Errorf("badge = %q, want PASS", got)
	}
	if n := len(htmlCharts(doc, "latency")); n != 2 {
		t.Errorf("%d latency charts, want 2", n)
	}
	if n := len(htmlCharts(doc, "throughput")); n != 1 {
		t.Errorf("%d throughput charts, want 1", n)
	}

	// Every step's throughput is in the summary table and on its bar.
	steps := htmlTextOf(htmlByID(t, doc, "steps"))
	tput := htmlCharts(doc, "throughput")
	for i, s := range r.Steps {
		want := fmtRate(s.Throughput)
		if !strings.Contains(steps, want) {
			t.Errorf("step %d: throughput %s missing from the summary table", i+1, want)
		}
		if len(tput) == 1 && !htmlContains(htmlSVGTexts(tput[0], "value"), want) {
			t.Errorf("step %d: throughput %s not written on its bar", i+1, want)
		}
	}
	if !strings.Contains(htmlTextOf(tput[0]), "bare Fiber: 17,480 req/s") {
		t.Error("the Fiber baseline is not labelled on the throughput chart")
	}

	// Every funnel count is written on its bar, in funnel order.
	funnels := htmlCharts(doc, "funnel")
	if len(funnels) != len(r.Steps) {
		t.Fatalf("%d funnel charts, want %d", len(funnels), len(r.Steps))
	}
	for i, s := range r.Steps {
		var want []string
		for _, row := range funnelRows(s.Funnel) {
			want = append(want, fmtInt(row.Count))
		}
		got := htmlSVGTexts(funnels[i], "count")
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("step %d funnel counts\n got %v\nwant %v", i+1, got, want)
		}
	}

	// Ratios with their targets and verdicts.
	ratios := htmlTextOf(htmlByID(t, doc, "ratios"))
	for _, want := range []string{"0.68", "≥ 0.50", "0.86", "≥ 0.85", "0.64", "≥ 0.70", "✗ missed", "17,480", "42,116", "330",
		"1.61", "1.29", "≤ 1.30", "Admission only (order tier off)", "13,021", "61.3 ms"} {
		if !strings.Contains(ratios, want) {
			t.Errorf("ratios section lacks %q", want)
		}
	}
	if got := strings.Count(ratios, "✓ met"); got != 3 {
		t.Errorf("%d ratios met, want 3", got)
	}

	// Per-outcome latency: the accepted p99 of each step.
	latency := htmlTextOf(htmlByID(t, doc, "latency"))
	for _, want := range []string{"34.7", "98.6", "451", "8,840"} {
		if !strings.Contains(latency, want) {
			t.Errorf("latency section lacks %q", want)
		}
	}

	// The same report renders to the same bytes (maps are sorted first).
	if again, _ := renderHTMLPage(t, r); again != page {
		t.Error("two renderings of the same report differ")
	}

	// BENCH_HTML_OUT=/tmp/bench-report.html keeps the page to look at (and
	// the empty report's beside it, as bench-report-empty.html).
	if out := os.Getenv("BENCH_HTML_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWriteHTMLEmptyReport(t *testing.T) {
	page, doc := renderHTMLPage(t, &bench.Report{})
	checkHTMLWellFormed(t, page, doc)
	if out := os.Getenv("BENCH_HTML_OUT"); out != "" {
		if err := os.WriteFile(strings.TrimSuffix(out, ".html")+"-empty.html", []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := htmlVerdict(t, doc); got != "FAIL" {
		t.Errorf("badge = %q, want FAIL (InvariantsOK is false)", got)
	}
	if n := len(htmlFindAll(doc, func(n *html.Node) bool { return n.Data == "svg" })); n != 0 {
		t.Errorf("%d charts for a report without steps", n)
	}
	for _, want := range []string{"No steps were run.", "no baselines", "Not measured."} {
		if !strings.Contains(page, want) {
			t.Errorf("empty report lacks %q", want)
		}
	}
}

// Degenerate figures (zero everything, an empty timeline, NaN and Inf from
// a division by a zero duration upstream) must still give a valid page.
func TestWriteHTMLDegenerateData(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	r := &bench.Report{
		InvariantsOK: true,
		Steps: []bench.Step{
			{Concurrency: 1}, // all zero, no timeline
			{Rate: 200, Throughput: nan, SoldOutThroughput: inf, OrdersPerSecond: nan,
				TimeToSellOutSeconds: inf, DurationSeconds: nan,
				Funnel:   bench.Funnel{Requests: 3, Accepted: 0, OrdersCreated: 0},
				Latency:  map[string]bench.Percentiles{"accepted": {Count: 1, P50: nan, P99: inf}, "teapot": {}},
				Timeline: []bench.Bucket{{AtSeconds: 0}, {AtSeconds: nan, Requests: 2, P50: nan, P99: inf}, {AtSeconds: 0.2, Requests: 1, P50: 0, P99: 0}},
			},
		},
		Baselines: &bench.Baselines{FiberRPS: inf, LuaPerSecond: nan},
		Ratios:    map[string]float64{"admission_vs_fiber": nan, "new_ratio": 1.5},
	}
	page, doc := renderHTMLPage(t, r)
	checkHTMLWellFormed(t, page, doc)
	if got := htmlVerdict(t, doc); got != "PASS" {
		t.Errorf("badge = %q, want PASS", got)
	}
	if !strings.Contains(page, "new_ratio") || !strings.Contains(page, "teapot") {
		t.Error("unknown ratios and outcomes must still be shown")
	}
	if strings.Contains(htmlTextOf(htmlByID(t, doc, "ratios")), "✓ met") {
		t.Error("a NaN ratio must not count as met")
	}
}

func TestWriteHTMLEscapesProblems(t *testing.T) {
	r := sampleHTMLReport()
	r.InvariantsOK = false
	r.Steps[1].InvariantsOK = false
	evil := `oversold: 501 accepted for 500 units <script>alert("x")</script> & more`
	r.Problems = []string{evil, "session 42: drift 1"}
	page, doc := renderHTMLPage(t, r)
	checkHTMLWellFormed(t, page, doc)

	if got := htmlVerdict(t, doc); got != "FAIL" {
		t.Errorf("badge = %q, want FAIL", got)
	}
	if strings.Contains(page, "<script>alert") {
		t.Error("a problem string was written unescaped")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(") {
		t.Error("the escaped problem string is missing")
	}
	var items []string
	for _, li := range htmlFindAll(doc, func(n *html.Node) bool { return n.Data == "li" }) {
		items = append(items, htmlTextOf(li))
	}
	if !htmlContains(items, evil) || !htmlContains(items, "session 42: drift 1") {
		t.Errorf("problems are not listed verbatim: %q", items)
	}
	if !strings.Contains(htmlTextOf(htmlByID(t, doc, "steps")), "✗ broken") {
		t.Error("the failed step is not marked in the summary table")
	}
}

func TestWriteHTMLNilReport(t *testing.T) {
	if err := WriteHTML(&bytes.Buffer{}, nil); err == nil {
		t.Error("WriteHTML(nil) succeeded")
	}
}

func TestHTMLSVGScaleNiceTicks(t *testing.T) {
	s := newSVGScale(0, 47.3, 0, 100, 5)
	if s.Lo != 0 || s.Hi != 50 || s.Step != 10 {
		t.Errorf("[0, 47.3] in 5 ticks: got [%v, %v] step %v, want [0, 50] step 10", s.Lo, s.Hi, s.Step)
	}
	if got := s.At(25); got != 50 {
		t.Errorf("At(25) = %v, want 50", got)
	}
	var labels []string
	for _, v := range s.Ticks() {
		labels = append(labels, s.Label(v))
	}
	if got := strings.Join(labels, " "); got != "0 10 20 30 40 50" {
		t.Errorf("labels %q", got)
	}

	// Inverted range, as for a y axis.
	y := newSVGScale(0, 3.1, 200, 0, 10)
	if y.Step != 0.5 || y.Hi != 3.5 || y.At(0) != 200 || y.At(3.5) != 0 {
		t.Errorf("y scale %+v", y)
	}
	if got := y.Label(y.Ticks()[3]); got != "1.5" {
		t.Errorf("label of the 4th tick = %q, want 1.5", got)
	}

	// Degenerate domains still give a usable, finite scale.
	for _, c := range [][2]float64{{0, 0}, {5, 5}, {math.NaN(), math.NaN()}, {0, math.Inf(1)}, {10, 0}} {
		s := newSVGScale(c[0], c[1], 0, 100, 5)
		if !(s.Hi > s.Lo) || !finite(s.At(c[1])) || !finite(s.At(math.NaN())) || len(s.Ticks()) < 2 {
			t.Errorf("domain %v: scale %+v", c, s)
		}
	}
	// Counts never get fractional ticks.
	if c := newSVGCountScale(2, 0, 100, 5); c.Step != 1 || c.Hi != 2 || len(c.Ticks()) != 3 {
		t.Errorf("count scale for 2: %+v", c)
	}
	if c := newSVGCountScale(0, 0, 100, 5); c.Step != 1 || c.Hi != 1 {
		t.Errorf("count scale for 0: %+v", c)
	}
	if c := newSVGCountScale(10000, 0, 100, 8); c.Step != 2000 || c.Hi != 10000 {
		t.Errorf("count scale for 10,000: %+v", c)
	}
	if w := newSVGScale(0, 12000, 0, 1, 5).LabelWidth(); w != svgTextWidth("12,000") {
		t.Errorf("label width %v", w)
	}
}

func TestHTMLNumberFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{fmtNum(1234567, 0), "1,234,567"},
		{fmtNum(-1234.5, 1), "-1,234.5"},
		{fmtNum(-0.001, 0), "0"},
		{fmtNum(math.NaN(), 2), "—"},
		{fmtInt(100), "100"},
		{fmtRate(9123.4), "9,123"},
		{fmtRate(42.26), "42.3"},
		{fmtRate(0), "0"},
		{fmtMs(3.14159), "3.14"},
		{fmtMs(34.72), "34.7"},
		{fmtMs(450.9), "451"},
		{fmtSeconds(0), "—"},
		{fmtSeconds(0.734), "0.73 s"},
		{fmtPercent(0.0037), "0.4%"},
		{fmtPercent(0.5), "50%"},
		{fmtPercent(0), "0%"},
		{fmtPercent(0.0003), "<0.1%"},
		{fmtPercent(math.Inf(1)), "—%"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// --- helpers over the parsed page ---

func htmlFindAll(root *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return out
}

func htmlAttr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func htmlHasClass(n *html.Node, class string) bool {
	return htmlContains(strings.Fields(htmlAttr(n, "class")), class)
}

func htmlContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func htmlTextOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func htmlByID(t *testing.T, doc *html.Node, id string) *html.Node {
	t.Helper()
	found := htmlFindAll(doc, func(n *html.Node) bool { return htmlAttr(n, "id") == id })
	if len(found) != 1 {
		t.Fatalf("%d elements with id %q, want 1", len(found), id)
	}
	return found[0]
}

func htmlVerdict(t *testing.T, doc *html.Node) string {
	t.Helper()
	b := htmlByID(t, doc, "verdict")
	text := strings.TrimSpace(htmlTextOf(b))
	if !htmlHasClass(b, strings.ToLower(text)) {
		t.Errorf("badge %q has class %q", text, htmlAttr(b, "class"))
	}
	return text
}

func htmlCharts(doc *html.Node, kind string) []*html.Node {
	return htmlFindAll(doc, func(n *html.Node) bool { return n.Data == "svg" && htmlAttr(n, "data-chart") == kind })
}

// htmlSVGTexts returns the own text (without tspans) of the chart's <text>
// elements of a class.
func htmlSVGTexts(chart *html.Node, class string) []string {
	var out []string
	for _, n := range htmlFindAll(chart, func(n *html.Node) bool { return n.Data == "text" && htmlHasClass(n, class) }) {
		if c := n.FirstChild; c != nil && c.Type == html.TextNode {
			out = append(out, c.Data)
		}
	}
	return out
}
