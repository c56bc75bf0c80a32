package bench

import (
	"math/rand/v2"
	"time"

	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/client"
)

// shopper is one simulated user: the Authorization header of the load
// loop's requests, and a typed client acting as that user for the rest.
type shopper struct {
	user  int64
	auth  string
	index int
	api   *client.Client
}

func makeShoppers(cfg Config, as *client.Client) ([]shopper, error) {
	out := make([]shopper, cfg.Users)
	base := int64(rand.IntN(1_000_000_000)) * 1000
	for i := range out {
		user := base + int64(i) + 1
		tok, err := auth.IssueToken(cfg.JWTSecret, user, 2*time.Hour, time.Now())
		if err != nil {
			return nil, err
		}
		out[i] = shopper{user: user, auth: "Bearer " + tok, index: i, api: as.WithToken(tok)}
	}
	return out, nil
}
