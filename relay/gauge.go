package relay

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// observeStates sets a by-state gauge (the refunds relay's refunds, the
// events relay's undelivered events) to the counts that count reads. A
// failed read leaves the gauge as it was: the next pass reads again.
func observeStates(ctx context.Context, gauge *prometheus.GaugeVec, count func(context.Context) (map[string]int, error)) {
	counts, err := count(ctx)
	if err != nil {
		return
	}
	for state, n := range counts {
		gauge.WithLabelValues(state).Set(float64(n))
	}
}
