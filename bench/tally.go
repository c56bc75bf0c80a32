package bench

import (
	"sort"
	"time"
)

// tally fills the funnel, latencies, timeline and time to sell out, and
// checks the admission invariants (never more than the stock, never over
// the per-user limit, no order number twice).
func (r *stepRunner) tally(rs []result) {
	f := &r.step.Funnel
	f.Requests = len(rs)
	perShopper := map[int]int{}
	seen := map[string]bool{}
	var lastWin time.Duration
	for _, x := range rs {
		if r.eligible != nil {
			switch {
			case x.outcome == OutAccepted && !r.eligible(x.shopper):
				r.problem("shopper %d bought without registering", x.shopper)
			case x.outcome == OutNotEligible && r.eligible(x.shopper):
				r.problem("shopper %d registered but was refused as not eligible", x.shopper)
			}
		}
		switch x.outcome {
		case OutAccepted:
			f.Accepted++
			perShopper[x.shopper] += r.cfg.Quantity
			if seen[x.orderNo] {
				r.problem("order number %s accepted twice", x.orderNo)
			}
			seen[x.orderNo] = true
			if end := x.at + x.latency; end > lastWin {
				lastWin = end
			}
		case OutSoldOutMemory:
			f.SoldOutMemory++
		case OutSoldOutRedis:
			f.SoldOutRedis++
		case OutLimit:
			f.LimitExceeded++
		case OutRateLimited:
			f.RateLimited++
		case OutWindow:
			f.Window++
		case OutNotEligible:
			f.NotEligible++
		default:
			f.OtherErrors++
		}
	}
	units := f.Accepted * r.cfg.Quantity
	if units > r.cfg.Stock {
		r.problem("oversold: %d units accepted for %d", units, r.cfg.Stock)
	}
	maxUnits := r.eligibleShoppers() * r.cfg.Limit
	if f.RateLimited == 0 && f.OtherErrors == 0 && maxUnits >= r.cfg.Stock && r.cfg.Stock-units >= r.cfg.Quantity {
		r.problem("%d units left unsold although demand exceeded stock", r.cfg.Stock-units)
	}
	for s, u := range perShopper {
		if u > r.cfg.Limit {
			r.problem("shopper %d holds %d units, limit %d", s, u, r.cfg.Limit)
		}
	}
	r.step.TimeToSellOutSeconds = lastWin.Seconds()
	for _, o := range Outcomes {
		if p := percentiles(rs, o.Code); p.Count > 0 {
			r.step.Latency[o.Code] = p
		}
	}
	r.step.Timeline = timeline(rs)
}

// eligibleShoppers counts the shoppers who may buy.
func (r *stepRunner) eligibleShoppers() int {
	if r.eligible == nil {
		return r.cfg.Users
	}
	n := 0
	for i := range r.cfg.Users {
		if r.eligible(i) {
			n++
		}
	}
	return n
}

func accepted(rs []result) []result {
	var out []result
	for _, r := range rs {
		if r.outcome == OutAccepted {
			out = append(out, r)
		}
	}
	return out
}

// percentiles of the results with outcome o ("" = all).
func percentiles(rs []result, o string) Percentiles {
	var ls []float64
	for _, x := range rs {
		if o == "" || x.outcome == o {
			ls = append(ls, float64(x.latency.Microseconds())/1000)
		}
	}
	if len(ls) == 0 {
		return Percentiles{}
	}
	sort.Float64s(ls)
	at := func(q float64) float64 { return ls[min(len(ls)-1, int(q*float64(len(ls))))] }
	return Percentiles{Count: len(ls), P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: ls[len(ls)-1]}
}

func timeline(rs []result) []Bucket {
	const width = 100 * time.Millisecond
	byBucket := map[int][]result{}
	last := 0
	for _, x := range rs {
		b := int(x.at / width)
		byBucket[b] = append(byBucket[b], x)
		last = max(last, b)
	}
	out := make([]Bucket, 0, last+1)
	for b := 0; b <= last; b++ {
		xs := byBucket[b]
		p := percentiles(xs, "")
		out = append(out, Bucket{AtSeconds: float64(b) * width.Seconds(), Requests: len(xs),
			Accepted: len(accepted(xs)), P50: p.P50, P99: p.P99})
	}
	return out
}

// Losers are the requests of a burst sent from its sell-out on (the last
// win's answer): the flood of losers in the sale's first second, which a
// sold-out burst sent a second later does not see.
type Losers struct {
	Count     int     `json:"count"`
	PerSecond float64 `json:"per_second"`
	P50       float64 `json:"p50_ms"`
	P99       float64 `json:"p99_ms"`
	// Outcomes counts them by answer: how many the sold-out memory refused
	// and how many still reached the script.
	Outcomes map[string]int `json:"outcomes"`
}

// perSecond is the losers' pace; 0 when there were none (nil).
func (l *Losers) perSecond() float64 {
	if l == nil {
		return 0
	}
	return l.PerSecond
}

// losers measures the requests after sell-outs, sent over span.
func losers(after []result, span time.Duration) *Losers {
	p := percentiles(after, "")
	return &Losers{Count: len(after), PerSecond: float64(len(after)) / span.Seconds(), P50: p.P50, P99: p.P99,
		Outcomes: outcomeCounts(after)}
}

// afterSellOut measures the requests of a burst of wall time dur sent from
// its last win's answer on; nil when the burst never sold out, or sold out
// at its end.
func afterSellOut(rs []result, dur time.Duration) *Losers {
	after, soldOut := lost(rs)
	span := dur - soldOut
	if soldOut == 0 || len(after) == 0 || span <= 0 {
		return nil
	}
	return losers(after, span)
}

// lost returns the requests of a burst sent from its last win's answer on,
// and when that was (0: no win).
func lost(rs []result) ([]result, time.Duration) {
	var soldOut time.Duration
	for _, x := range rs {
		if x.outcome == OutAccepted {
			soldOut = max(soldOut, x.at+x.latency)
		}
	}
	if soldOut == 0 {
		return nil, 0
	}
	var after []result
	for _, x := range rs {
		if x.at >= soldOut {
			after = append(after, x)
		}
	}
	return after, soldOut
}

// refusals are the percentiles of a burst's answers other than accepted.
func refusals(rs []result) Percentiles {
	var out []result
	for _, x := range rs {
		if x.outcome != OutAccepted {
			out = append(out, x)
		}
	}
	return percentiles(out, "")
}
