package redis_test

import (
	"testing"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/storetest"
	"github.com/seckill/seckill/internal/testenv"
)

// The Redis gate keeps the contract the workflow tests' fake keeps
// (internal/storetest): one key prefix, a fresh session per case.
func TestGateContract(t *testing.T) { testenv.OnTopologies(t, testGateContract) }

func testGateContract(t *testing.T, server string) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, RedisServer: server})
	storetest.TestGate(t, func(_ *testing.T, stock, limit int) (storetest.Gate, *seckill.Session) {
		return e.Gate, e.Session(stock, limit, 100)
	})
}
