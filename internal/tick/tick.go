// Package tick runs the background loops of the API and the worker (the
// blocklist refresh, the sold-out watcher, the relays, the sale observer):
// one function called every interval until its context ends.
package tick

import (
	"context"
	"time"
)

// Every calls f each interval until ctx ends; the first call comes one
// interval after the start.
func Every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
