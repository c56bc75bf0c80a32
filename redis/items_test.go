package redis_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// A sale of several items in the gate: each item sells out on its own in
// the one script, the per-user limit counts across them, a release gives
// the unit back to its item, and an add racing the preheat is counted once
// in its item too.
func TestItemsGate(t *testing.T) {
	testenv.OnTopologies(t, func(t *testing.T, server string) {
		e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, RedisServer: server})
		ctx := context.Background()
		sess := &seckill.Session{ID: 77, Title: "Runner", PerUserLimit: 2, StartAt: time.Now().Add(-time.Second), EndAt: time.Now().Add(time.Hour)}
		sess.SetItems([]seckill.Item{{SKUID: 38, Title: "EU 38", PriceCents: 700, TotalStock: 3}, {SKUID: 39, Title: "EU 39", PriceCents: 800, TotalStock: 2}})
		// An add to EU 39 made before the preheat, which MySQL's figures
		// do not hold yet: the load counts it in the sale and in its item.
		left, err := e.Gate.AddStock(ctx, sess, 2, 39, "add-early")
		require.NoError(t, err)
		require.Equal(t, -1, left, "not preheated: recorded as pending")
		n, err := e.Gate.PreheatHolding(ctx, sess.ID, 5, map[int64]int{38: 3, 39: 2}, nil)
		require.NoError(t, err)
		require.Equal(t, 7, n)
		items, err := e.Gate.ItemStocks(ctx, sess.ID)
		require.NoError(t, err)
		require.Equal(t, map[int64]int{38: 3, 39: 4}, items)

		attempt := func(user, sku int64, no string) (*seckill.Admission, error) {
			return e.Gate.AdmitAttempt(ctx, &seckill.Attempt{Session: sess, UserID: user, Quantity: 1, SKUID: sku,
				OrderNo: fmt.Sprintf("%d-%s", sess.ID, no), TraceID: "t-" + no, Now: time.Now(), Fingerprint: "1"})
		}
		// Twelve shoppers at once, all for EU 38: exactly its 3 units go.
		var wg sync.WaitGroup
		adms, errs := make([]*seckill.Admission, 12), make([]error, 12)
		for i := range adms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				adms[i], errs[i] = attempt(int64(100+i), 38, fmt.Sprintf("a%d", i))
			}()
		}
		wg.Wait()
		var winners []*seckill.Admission
		for i, adm := range adms {
			if errs[i] != nil {
				require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(errs[i]), "%v", errs[i])
				require.Equal(t, 4, adm.Left, "the sale's stock left, not the item's: the sale is not sold out")
				continue
			}
			winners = append(winners, adm)
			require.EqualValues(t, 38, adm.Reservation.SKUID)
		}
		require.Len(t, winners, 3)
		items, err = e.Gate.ItemStocks(ctx, sess.ID)
		require.NoError(t, err)
		require.Equal(t, map[int64]int{38: 0, 39: 4}, items)

		// The limit counts across the sale: user 1 takes one of each, not a third.
		_, err = attempt(1, 39, "u1a")
		require.NoError(t, err)
		_, err = attempt(1, 39, "u1b")
		require.NoError(t, err)
		_, err = attempt(1, 39, "u1c")
		require.Equal(t, seckill.ELIMIT, seckill.ErrorCode(err), "%v", err)

		// A release gives the unit back to its own item, once.
		for range 2 {
			_, err = e.Gate.Release(ctx, sess.ID, winners[0].OrderNo)
			require.NoError(t, err)
		}
		items, err = e.Gate.ItemStocks(ctx, sess.ID)
		require.NoError(t, err)
		require.Equal(t, map[int64]int{38: 1, 39: 2}, items)
		stock, _, err := e.Gate.Stock(ctx, sess.ID)
		require.NoError(t, err)
		require.Equal(t, 3, stock, "the sale's stock is its items' sum")

		snap, err := e.Gate.SessionSnapshot(ctx, sess.ID)
		require.NoError(t, err)
		require.Equal(t, map[int64]int{38: 1, 39: 2}, snap.Items)
		require.EqualValues(t, 38, snap.ReservedItem[winners[1].OrderNo])
		require.EqualValues(t, 39, snap.ReservedItem[fmt.Sprintf("%d-u1a", sess.ID)])
		require.Zero(t, snap.MarkMismatches)

		// A rebuild from MySQL's figures restores each item's stock and
		// the reservations' items.
		held := []seckill.Reservation{*winners[1].Reservation}
		require.NoError(t, e.Gate.Rebuild(ctx, sess.ID, 6, map[int64]int{38: 2, 39: 4}, held))
		items, err = e.Gate.ItemStocks(ctx, sess.ID)
		require.NoError(t, err)
		require.Equal(t, map[int64]int{38: 2, 39: 4}, items)
		_, err = e.Gate.Release(ctx, sess.ID, winners[1].OrderNo)
		require.NoError(t, err)
		items, err = e.Gate.ItemStocks(ctx, sess.ID)
		require.NoError(t, err)
		require.Equal(t, map[int64]int{38: 3, 39: 4}, items, "the rebuilt reservation still names its item")
	})
}

// A unit back in one size keeps that size's refused keys refused (a key
// stamped within the clock skew after it may have been refused before),
// and no other size's: a shopper's fresh key for a size with stock wins
// while another size gets a unit back.
func TestItemReopensOnItsOwn(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	sess := &seckill.Session{ID: 78, Title: "Runner", PerUserLimit: 1, StartAt: time.Now().Add(-time.Second), EndAt: time.Now().Add(time.Hour)}
	sess.SetItems([]seckill.Item{{SKUID: 38, Title: "EU 38", PriceCents: 700, TotalStock: 1}, {SKUID: 39, Title: "EU 39", PriceCents: 800, TotalStock: 5}})
	_, err := e.Gate.PreheatHolding(ctx, sess.ID, 6, map[int64]int{38: 1, 39: 5}, nil)
	require.NoError(t, err)
	keyed := func(user, sku int64, no string) error {
		_, err := e.Gate.AdmitAttempt(ctx, &seckill.Attempt{Session: sess, UserID: user, Quantity: 1, SKUID: sku,
			OrderNo: fmt.Sprintf("%d-%s", sess.ID, no), TraceID: "t-" + no, Now: time.Now(), Fingerprint: fmt.Sprintf("1:%d", sku),
			IdempotencyKey: "key-" + no, KeyTime: time.Now()})
		return err
	}
	require.NoError(t, keyed(1, 38, "a"))
	_, err = e.Gate.Release(ctx, sess.ID, fmt.Sprintf("%d-a", sess.ID))
	require.NoError(t, err)
	require.NoError(t, keyed(2, 39, "b"), "EU 39 had stock all along: EU 38's unit coming back changes nothing for it")
	err = keyed(3, 38, "c")
	require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(err), "a key stamped within the skew after EU 38 reopened stays refused: %v", err)
}
