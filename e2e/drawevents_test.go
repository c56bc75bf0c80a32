package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

// A draw sale's registration events on the real services, with
// SECKILL_EVENTS_LOST=1: the session's workflow draws (registration.won
// for the winner), the unused right lapses and passes on
// (registration.won for the next), that one buys (order.created), and at
// the sale's end everyone who bought nothing hears registration.lost: the
// lapsed winner (after its won) and the never drawn, never the buyer. All
// pushed signed, each once, in order per registration, with the API
// version, and the same in the feed.
func TestDrawSaleRegistrationEvents(t *testing.T) {
	e := testenv.New(t, testenv.Options{Configure: func(c *app.Config) { c.EventsLost = true }})
	ctx := context.Background()
	pushed := receiveEvents(t, e)
	const ttl = 4
	now := time.Now().UTC().Truncate(time.Millisecond)
	start := now.Add(3 * time.Second)
	sess := &seckill.Session{SKUID: 7, Title: "draw", PriceCents: 100, TotalStock: 1, PerUserLimit: 1,
		StartAt: start, EndAt: start.Add(16 * time.Second), Mode: seckill.ModeDraw,
		RegisterFrom: now.Add(-time.Hour), RegisterUntil: start, RightTTLSeconds: ttl}
	require.NoError(t, e.DB.CreateSession(ctx, sess, nil))
	_, err := e.App.Orders().StartSession(ctx, sess.ID)
	require.NoError(t, err)
	e.WaitCommitted(sess.ID)
	e.RegisterUsers(sess.ID, []int64{11, 12, 13, 14})

	var entries []seckill.DrawEntry
	e.Eventually(30*time.Second, "drawn, and the first right passed on", func() error {
		es, err := e.DB.DrawEntries(ctx, sess.ID)
		if err == nil && (len(es) != 2 || es[1].RightUntil.IsZero()) {
			err = fmt.Errorf("entries %+v", es)
		}
		entries = es
		return err
	})
	lapsed, buyer := entries[0].UserID, entries[1].UserID
	var no string
	e.Eventually(time.Duration(ttl-1)*time.Second, "the right passed on buys (once Redis holds it)", func() error {
		r := e.BuyWithKey(sess.ID, buyer, testenv.KeyAt(time.Now()), 1)
		if r.Status != http.StatusAccepted {
			return fmt.Errorf("%d %s", r.Status, r.Raw)
		}
		no = r.Str("order_no")
		return nil
	})
	e.WaitStatus(e.Token(buyer), no, 15*time.Second, seckill.StatusWaitPay)

	// types lists each registration's (and the order's) events in the
	// order they came, checking each event's body.
	types := func(events []seckill.Event) map[string][]seckill.EventType {
		out := map[string][]seckill.EventType{}
		for _, ev := range events {
			require.Equal(t, seckill.EventAPIVersion, ev.APIVersion)
			key := no
			if ev.Registration != nil {
				var reg seckill.Registration
				require.NoError(t, json.Unmarshal(ev.Registration, &reg))
				require.Equal(t, sess.ID, reg.SessionID)
				key = fmt.Sprint(reg.UserID)
				switch ev.Type {
				case seckill.EventRegistrationWon:
					require.Equal(t, seckill.RegistrationWon, reg.Status)
					require.False(t, reg.RightUntil.IsZero())
				case seckill.EventRegistrationLost:
					require.Equal(t, seckill.RegistrationLost, reg.Status)
				default:
					t.Fatalf("a registration's event %s", ev.Type)
				}
			} else {
				var o seckill.Order
				require.NoError(t, json.Unmarshal(ev.Order, &o))
				require.Equal(t, no, o.OrderNo)
			}
			out[key] = append(out[key], ev.Type)
		}
		return out
	}
	won, lost := seckill.EventRegistrationWon, seckill.EventRegistrationLost
	want := map[string][]seckill.EventType{
		fmt.Sprint(lapsed): {won, lost},
		fmt.Sprint(buyer):  {won},
		no:                 {seckill.EventOrderCreated},
	}
	for _, u := range []int64{11, 12, 13, 14} {
		if u != lapsed && u != buyer {
			want[fmt.Sprint(u)] = []seckill.EventType{lost}
		}
	}
	e.Eventually(40*time.Second, "the sale ended: every event pushed", func() error {
		if got := pushed(); len(got) != 6 {
			return fmt.Errorf("%d events pushed: %v", len(got), types(got))
		}
		return nil
	})
	require.Equal(t, want, types(pushed()))
	f := e.Do("GET", "/admin/v1/events?limit=1000", testenv.AdminToken, nil)
	require.Equal(t, http.StatusOK, f.Status, "%s", f.Raw)
	var page struct{ Events []seckill.Event }
	require.NoError(t, json.Unmarshal(f.Raw, &page))
	require.Equal(t, want, types(page.Events), "the feed has them too")
	e.RequireInvariants(sess.ID)
}
