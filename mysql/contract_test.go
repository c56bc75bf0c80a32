package mysql_test

import (
	"testing"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/storetest"
	"github.com/seckill/seckill/internal/testenv"
)

// The MySQL store keeps the contract the workflow tests' fake keeps
// (internal/storetest): one database, a fresh session per case.
func TestStoreContract(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	storetest.TestStore(t, func(_ *testing.T, stock, limit int) (storetest.Store, *seckill.Session) {
		return e.DB, e.Session(stock, limit, 100)
	})
}

// The operators' named tokens keep the contract the fake keeps: a fresh
// database per case, so each case sees only its own operators.
func TestOperatorStoreContract(t *testing.T) {
	storetest.TestOperatorStore(t, func(t *testing.T) (storetest.OperatorStore, func(time.Time)) {
		e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
		return e.DB, e.DB.StopClockForTest
	})
}
