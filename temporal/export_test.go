package temporal

import (
	"go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
)

// StartOptions are the options an order's workflow starts with
// (startOptions), for the benchmarks of what they cost the server.
func StartOptions(req *seckill.OrderRequest) client.StartWorkflowOptions {
	return (&Orders{}).startOptions(req)
}
