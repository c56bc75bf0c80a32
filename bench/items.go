package bench

import (
	"context"
	"fmt"
	"io"

	"github.com/seckill/seckill/client"
)

// ItemsSale is a first-come sale of several items (sizes) measured as the
// rounds' steps are (--items N): the same stock, shoppers and load, the
// stock split over N items and each request naming one of them in turn,
// so the per-item stock check is what differs. Its burst is read against
// the last one-item step's, in the same run.
type ItemsSale struct {
	Items     int   `json:"items"`
	SessionID int64 `json:"session_id"`
	// BurstPerSecond is the sale's burst (requests/s), OneItemPerSecond
	// the last one-item step's, and VsOneItem the first over the second.
	BurstPerSecond   float64 `json:"burst_per_second"`
	OneItemPerSecond float64 `json:"one_item_per_second"`
	VsOneItem        float64 `json:"vs_one_item,omitempty"`
	// Step is the sale's bursts, funnel, followers and invariants (per
	// item, reconcile's).
	Step Step `json:"step"`
}

// itemSKU is the SKU of the bench's i-th item (0-based).
func itemSKU(i int) int64 { return 7001 + int64(i) }

// measureItems runs a step whose sale has items items.
func measureItems(ctx context.Context, cfg Config, c *httpClient, admin *client.Client, shoppers []shopper, rep *Report, cpu *serverCPU, level, items int) (*ItemsSale, error) {
	r := &stepRunner{cfg: cfg, c: c, api: admin, shoppers: shoppers, rep: rep, cpu: cpu, label: "items ", items: items}
	r.newStep(level)
	r.step.Sale = "items"
	if err := r.createSession(ctx); err != nil {
		return nil, err
	}
	st, err := r.sell(ctx)
	if err != nil {
		return nil, err
	}
	s := &ItemsSale{Items: items, SessionID: st.SessionID, BurstPerSecond: st.Throughput, Step: *st}
	if len(rep.Steps) > 0 {
		s.OneItemPerSecond = rep.Steps[len(rep.Steps)-1].Throughput
		s.VsOneItem, _ = div(s.BurstPerSecond, s.OneItemPerSecond)
	}
	return s, nil
}

// writeItems prints the sale of items beside the one-item burst.
func writeItems(w io.Writer, s *ItemsSale) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "  sale of %d items %d: burst %.0f/s against the one-item step's %.0f/s: items_vs_one_item %.2f; invariants ok: %v\n",
		s.Items, s.SessionID, s.BurstPerSecond, s.OneItemPerSecond, s.VsOneItem, s.Step.InvariantsOK)
}
