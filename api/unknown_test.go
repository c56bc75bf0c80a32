package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/expiring"
	"github.com/seckill/seckill/internal/testenv"
)

// lookups counts the API's MySQL lookups of sessions and orders, per id.
type lookups struct {
	app.APIStore
	mu       sync.Mutex
	sessions map[int64]int
	orders   map[string]int
}

func (l *lookups) Session(ctx context.Context, id int64) (*seckill.Session, int, error) {
	l.mu.Lock()
	l.sessions[id]++
	l.mu.Unlock()
	return l.APIStore.Session(ctx, id)
}

func (l *lookups) Order(ctx context.Context, orderNo string) (*seckill.Order, error) {
	l.mu.Lock()
	l.orders[orderNo]++
	l.mu.Unlock()
	return l.APIStore.Order(ctx, orderNo)
}

func (l *lookups) counts(session int64, order string) (int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sessions[session], l.orders[order]
}

// Unknown session ids and order numbers cost at most one MySQL query per id
// per second however hard and however concurrently they are asked for, a
// flood of distinct ones costs bounded memory, and an order number that
// cannot be one of ours never reaches MySQL.
func TestUnknownIDsCostBoundedQueries(t *testing.T) {
	testenv.SkipShort(t, "MariaDB and Redis")
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, Temporal: true})
	sess := e.Session(5, 1, 100)
	db := &lookups{APIStore: e.DB, sessions: map[int64]int{}, orders: map[string]int{}}
	srv := newServer(t, e, app.APIConfig{}, db)
	const bound = 64
	// The negative caches of unknown session ids and order numbers, shrunk
	// so that the bound shows without a production-sized flood.
	srv.Sessions.Unknown = expiring.New[int64, struct{}](bound)
	srv.Orders.Unknown = expiring.New[string, struct{}](bound)
	unknownCached := func() (int, int) { return srv.Sessions.Unknown.Len(), srv.Orders.Unknown.Len() }
	serve(t, e, srv)
	tok := e.Token(1)

	// The same unknown ids, hammered concurrently for two seconds.
	hotSession := int64(1_000_000_007)
	hotOrder := fmt.Sprintf("%d-%032x", sess.ID, 12345)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < 2100*time.Millisecond {
				require.Equal(t, http.StatusNotFound, e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d", hotSession), "", nil).Status)
				require.Equal(t, http.StatusNotFound, e.Do("GET", "/api/v1/orders/"+hotOrder, tok, nil).Status)
			}
		}()
	}
	wg.Wait()
	most := int(time.Since(start)/time.Second) + 1
	s, o := db.counts(hotSession, hotOrder)
	require.True(t, s >= 1 && s <= most, "%d session queries in %s", s, time.Since(start))
	require.True(t, o >= 1 && o <= most, "%d order queries in %s", o, time.Since(start))

	// Many distinct unknown ids, concurrently: one query each, and the
	// memory they cost stays within the bound.
	const distinct = 600
	sem := make(chan struct{}, 16)
	for i := 0; i < distinct; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			require.Equal(t, http.StatusNotFound, e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d", 2_000_000_000+i), "", nil).Status)
			require.Equal(t, http.StatusNotFound, e.Do("GET", fmt.Sprintf("/api/v1/orders/%d-%032x", sess.ID, i), tok, nil).Status)
			ns, no := unknownCached()
			require.LessOrEqual(t, ns, bound)
			require.LessOrEqual(t, no, bound)
		}()
	}
	wg.Wait()
	for i := 0; i < distinct; i++ {
		s, o := db.counts(int64(2_000_000_000+i), fmt.Sprintf("%d-%032x", sess.ID, i))
		require.Equal(t, 1, s, "session %d", i)
		require.Equal(t, 1, o, "order %d", i)
	}
	ns, no := unknownCached()
	require.LessOrEqual(t, ns, bound)
	require.LessOrEqual(t, no, bound)

	// Numbers that cannot be order numbers are NOT_FOUND without a lookup.
	for _, bad := range []string{"abc", "1-", "-1", "0-x", "99999999999999999999-x", "1x-2", "%20"} {
		testenv.RequireError(t, e.Do("GET", "/api/v1/orders/"+bad, tok, nil), 404, "NOT_FOUND", "not found")
	}
	db.mu.Lock()
	require.Len(t, db.orders, distinct+1, "only well-formed numbers reached MySQL: %v", len(db.orders))
	db.mu.Unlock()

	// The memory of an unknown id expires: a second later it is asked again.
	s0, o0 := db.counts(hotSession, hotOrder)
	time.Sleep(1100 * time.Millisecond)
	require.Equal(t, http.StatusNotFound, e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d", hotSession), "", nil).Status)
	require.Equal(t, http.StatusNotFound, e.Do("GET", "/api/v1/orders/"+hotOrder, tok, nil).Status)
	s1, o1 := db.counts(hotSession, hotOrder)
	require.Equal(t, s0+1, s1)
	require.Equal(t, o0+1, o1)
	// And real ones are served as ever.
	require.Equal(t, http.StatusOK, e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d", sess.ID), "", nil).Status)
}
