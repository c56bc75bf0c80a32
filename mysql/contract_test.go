package mysql_test

import (
	"testing"

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
