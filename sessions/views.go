package sessions

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill"
)

// listLimit bounds the public session list: a shop page, not a catalogue.
const listLimit = 20

// Views are sessions as shoppers see them (GET /api/v1/sessions and
// /api/v1/sessions/{id}): each with the stock Redis holds and its state,
// and the list of those not yet ended, kept in process memory as the
// encoded answer: under a sale's load every shopper's page asks for it, so
// at most one load (one MySQL query and one Redis read per listed session)
// runs per TTL, concurrent misses share it, and a failed load keeps
// serving the last good answer.
type Views struct {
	// Stock is a session's stock in Redis, and whether it was preheated;
	// ItemStocks a sale of several items' by SKU.
	Stock interface {
		Stock(ctx context.Context, sessionID int64) (int, bool, error)
		ItemStocks(ctx context.Context, sessionID int64) (map[int64]int, error)
	}
	// Open lists the sessions not ended at now, soonest first (MySQL).
	Open interface {
		OpenSessions(ctx context.Context, now time.Time, limit int) ([]*seckill.Session, error)
	}
	TTL time.Duration
	Now func() time.Time
	// Currency is the deployment's (SECKILL_CURRENCY): a session without
	// its own is shown in it, never without one.
	Currency string

	group   singleflight.Group
	mu      sync.RWMutex
	body    []byte
	expires time.Time
}

// View is sess as a shopper sees it.
func (v *Views) View(ctx context.Context, sess *seckill.Session) (*seckill.SessionView, error) {
	stock, preheated, err := v.Stock.Stock(ctx, sess.ID)
	if err != nil {
		return nil, err
	}
	state := sess.StateAt(v.Now(), stock)
	if !preheated {
		// Not loaded into Redis: nothing can be bought, and nothing was
		// sold. In its window that is PREPARING (its life preheats it, or
		// an operator must), never SOLD_OUT with stock in MySQL.
		stock = 0
		if state == seckill.SessionActive || state == seckill.SessionSoldOut {
			state = seckill.SessionPreparing
		}
	}
	if sess.Currency == "" && v.Currency != "" {
		own := *sess // the cache's copy is shared: the view gets its own
		own.Currency = v.Currency
		sess = &own
	}
	items := []seckill.ItemView{{Item: sess.AllItems()[0], RemainingStock: stock}}
	if sess.Several() {
		left := map[int64]int{}
		if preheated {
			if left, err = v.Stock.ItemStocks(ctx, sess.ID); err != nil {
				return nil, err
			}
		}
		items = make([]seckill.ItemView, len(sess.Items))
		for i, it := range sess.Items {
			items[i] = seckill.ItemView{Item: it, RemainingStock: left[it.SKUID]}
		}
	}
	return &seckill.SessionView{Session: sess, RemainingStock: stock, State: state, Items: items}, nil
}

// kept is the list answer memory holds and whether it is still fresh.
func (v *Views) kept() ([]byte, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.body, v.body != nil && time.Now().Before(v.expires)
}

// List is the encoded list answer ({"sessions": [views]}), at most TTL old.
func (v *Views) List(ctx context.Context) ([]byte, error) {
	body, fresh := v.kept()
	if fresh {
		return body, nil
	}
	b, err, _ := v.group.Do("list", func() (any, error) {
		// A load that finished just before this one started has answered.
		if b, fresh := v.kept(); fresh {
			return b, nil
		}
		// Detached from the request that happened to trigger the load: the
		// others waiting on it must not fail because that one went away.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		b, err := v.load(lctx)
		if err != nil {
			return nil, err
		}
		v.mu.Lock()
		v.body, v.expires = b, time.Now().Add(v.TTL)
		v.mu.Unlock()
		return b, nil
	})
	if err != nil {
		if body != nil {
			return body, nil
		}
		return nil, seckill.Errorf(seckill.EUNAVAILABLE, "sessions are unavailable, retry shortly")
	}
	return b.([]byte), nil
}

// load builds the list answer: sessions not ended, soonest first, each as
// View shows it.
func (v *Views) load(ctx context.Context) ([]byte, error) {
	open, err := v.Open.OpenSessions(ctx, v.Now(), listLimit)
	if err != nil {
		return nil, err
	}
	views := make([]*seckill.SessionView, 0, len(open))
	for _, sess := range open {
		view, err := v.View(ctx, sess)
		if err != nil {
			return nil, err
		}
		views = append(views, view)
	}
	return json.Marshal(struct {
		Sessions []*seckill.SessionView `json:"sessions"`
	}{views})
}
