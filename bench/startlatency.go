package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// startHistogram is the API's own histogram of its workflow starts
// (seckill_workflow_start_duration_seconds on its /metrics): cumulative
// counts by upper bound, and the total.
type startHistogram struct {
	bounds []float64
	counts []uint64
	total  uint64
}

const startMetric = "seckill_workflow_start_duration_seconds"

// scrapeStarts reads the API's start histogram; ok is false when the API
// serves none (an older API, or metrics off).
func scrapeStarts(ctx context.Context, base string) (h startHistogram, ok bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return h, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return h, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return h, false, fmt.Errorf("GET %s/metrics: %s", base, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return h, false, err
	}
	mf := families[startMetric]
	if mf == nil || len(mf.GetMetric()) == 0 || mf.GetMetric()[0].GetHistogram() == nil {
		return h, false, nil
	}
	hist := mf.GetMetric()[0].GetHistogram()
	for _, b := range hist.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			// The total counts it; a start past the last finite bound
			// counts as that bound (startLatency), never as +Inf, which
			// JSON cannot hold.
			continue
		}
		h.bounds = append(h.bounds, b.GetUpperBound())
		h.counts = append(h.counts, b.GetCumulativeCount())
	}
	h.total = hist.GetSampleCount()
	return h, true, nil
}

// startLatency is what happened between two scrapes of the histogram: how
// many starts, and their p50/p99 in milliseconds, interpolated inside the
// bucket as Prometheus's histogram_quantile does (a start slower than the
// last bound counts as that bound).
func startLatency(before, after startHistogram) *StartLatency {
	n := after.total - before.total
	if n == 0 || len(after.bounds) == 0 || len(before.counts) != len(after.counts) {
		return &StartLatency{Starts: int(n)}
	}
	delta := make([]uint64, len(after.counts))
	for i := range after.counts {
		delta[i] = after.counts[i] - before.counts[i]
	}
	q := func(phi float64) float64 {
		rank := phi * float64(n)
		i := sort.Search(len(delta), func(i int) bool { return float64(delta[i]) >= rank })
		if i == len(delta) {
			return after.bounds[len(after.bounds)-1] * 1000
		}
		lo, below := 0.0, uint64(0)
		if i > 0 {
			lo, below = after.bounds[i-1], delta[i-1]
		}
		in := delta[i] - below
		if in == 0 {
			return after.bounds[i] * 1000
		}
		return (lo + (after.bounds[i]-lo)*(rank-float64(below))/float64(in)) * 1000
	}
	return &StartLatency{Starts: int(n), P50Ms: q(0.5), P99Ms: q(0.99)}
}
