package drill

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// replay asks every attempt's key once more, after the sale settled (stock
// given back, orders closed): the same key always gets the same answer.
func (r *runner) replay(ctx context.Context, attempts []*attempt) {
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	deadline := time.Now().Add(r.cfg.Settle)
	for _, a := range attempts {
		if a.final.unknown() {
			continue
		}
		if a.final.layer == layerSoldOutMemory {
			r.problem("key %s of user %d was answered %s from the API's in-memory sold-out flag, which pins nothing", a.key, a.user, a.final)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			again := r.ask(ctx, a, 0, deadline)
			a.replay = again
			switch {
			case again.status == a.final.status && again.orderNo == a.final.orderNo && again.code == a.final.code:
			case a.final.status == http.StatusConflict && again.status == http.StatusAccepted:
				r.problem("key %s of user %d answered %s during the sale, then %s once stock came back: the refusal was not pinned to the key", a.key, a.user, a.final, again)
			default:
				r.problem("key %s of user %d answered %s, then %s", a.key, a.user, a.final, again)
			}
		}()
	}
	wg.Wait()
}

// A keyed purchase must never be answered from the API's in-memory
// sold-out flag (the layer header, api.HeaderLayer): that answer pins
// nothing, so the same key could buy once stock is back. The admission
// script answers keyed requests, and pins its SOLD_OUT.
const layerSoldOutMemory = "soldout_memory"
