package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
)

// CaptchaCost is what the human check costs the API (issue 13): n captchas
// drawn by distinct shoppers of a session that requires one, at the run's
// concurrency, next to the same run's sold-out answers.
type CaptchaCost struct {
	Drawn     int     `json:"drawn"`
	PerSecond float64 `json:"per_second"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	// VsSoldOut is PerSecond over the last step's sold-out requests/s: how
	// many sold-out answers one captcha costs, inverted.
	VsSoldOut float64 `json:"vs_soldout"`
}

// measureCaptchas draws n captchas through the API, one per shopper (the
// per-user limit allows a few a second each), conc at a time.
func measureCaptchas(ctx context.Context, cfg Config, admin *client.Client, shoppers []shopper, c *httpClient, conc, n int) (*CaptchaCost, error) {
	now := time.Now()
	sess, err := admin.CreateSession(ctx, &seckill.Session{SKUID: 9000, Title: "bench captcha", PriceCents: 100, TotalStock: 1,
		PerUserLimit: 1, StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour), RequireCaptcha: true})
	if err != nil {
		return nil, fmt.Errorf("captcha session: %w", err)
	}
	n = min(n, len(shoppers))
	lat := make([]float64, n)
	path := fmt.Sprintf("/api/v1/sessions/%d/captcha", sess.ID)
	perSec, err := closedLoop(conc, n, func(i int) error {
		t0 := time.Now()
		code, body, _, err := c.do(http.MethodPost, path, shoppers[i].auth, nil)
		lat[i] = float64(time.Since(t0).Microseconds()) / 1000
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("captcha: %d %s", code, body)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(lat)
	fmt.Fprintf(cfg.Progress, "captcha: %d drawn, %.0f/s, p50 %.1f ms, p99 %.1f ms\n", n, perSec, lat[n/2], lat[n*99/100])
	return &CaptchaCost{Drawn: n, PerSecond: perSec, P50Ms: lat[n/2], P99Ms: lat[n*99/100]}, nil
}
