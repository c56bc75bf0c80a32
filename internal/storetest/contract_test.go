package storetest_test

import (
	"testing"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/storetest"
)

func session(stock, limit int) seckill.Session {
	now := time.Now().UTC()
	return seckill.Session{ID: 7, SKUID: 42, Title: "fake sale", PriceCents: 100, TotalStock: stock,
		PerUserLimit: limit, StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour)}
}

// The fakes the workflow tests run on keep the contract mysql.DB and
// redis.Gate keep (mysql/contract_test.go, redis/contract_test.go).
func TestMemStoreKeepsTheContract(t *testing.T) {
	storetest.TestStore(t, func(_ *testing.T, stock, limit int) (storetest.Store, *seckill.Session) {
		s := session(stock, limit)
		return storetest.NewMemStore(nil, s), &s
	})
}

func TestMemGateKeepsTheContract(t *testing.T) {
	storetest.TestGate(t, func(_ *testing.T, stock, limit int) (storetest.Gate, *seckill.Session) {
		s := session(stock, limit)
		return storetest.NewMemGate(nil, s), &s
	})
}

func TestMemStoreKeepsTheOperatorContract(t *testing.T) {
	storetest.TestOperatorStore(t, func(*testing.T) (storetest.OperatorStore, func(time.Time)) {
		s := storetest.NewMemStore(nil, session(1, 1))
		return s, s.SetOperatorClock
	})
}
