package testenv

import (
	"context"
	"errors"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/app"
)

// LoseStarts is the test seam for "the API dies after the Lua script and
// before StartWorkflow": wrapped in it (Options.WrapFlow), the API loses
// every workflow start, and only the relay can start the orders.
func LoseStarts(f app.APIFlow) app.APIFlow { return lostStarts{f} }

type lostStarts struct{ app.APIFlow }

func (lostStarts) Start(context.Context, *seckill.OrderRequest) (bool, error) {
	return false, errors.New("drill: the API process died before StartWorkflow")
}
