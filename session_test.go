package seckill_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// A session must sell at a positive price: free items are refused at
// creation with a message naming them, since an order of amount 0 could
// never be paid and would only hold stock until its pay timeout.
func TestSessionValidateRefusesFreeItems(t *testing.T) {
	now := time.Now().UTC()
	s := seckill.Session{SKUID: 1, Title: "t", PriceCents: 1, TotalStock: 1, PerUserLimit: 1,
		StartAt: now, EndAt: now.Add(time.Hour)}
	require.NoError(t, s.Validate())
	for _, price := range []int64{0, -1} {
		s.PriceCents = price
		err := s.Validate()
		require.Equal(t, seckill.EINVALID, seckill.ErrorCode(err), "price %d", price)
		require.Contains(t, seckill.ErrorMessage(err), "free items", "price %d", price)
	}
}

// A title is what the shop page, the CSV export and the provider's
// checkout show: a blank one, one over 200 bytes, one not UTF-8 or one
// with a control character is refused, for the sale and for each item.
func TestSessionValidateRefusesUnreadableTitles(t *testing.T) {
	now := time.Now().UTC()
	single := seckill.Session{SKUID: 1, Title: "Runner · 跑鞋", PriceCents: 1, TotalStock: 1, PerUserLimit: 1,
		StartAt: now, EndAt: now.Add(time.Hour)}
	require.NoError(t, single.Validate())
	several := single
	several.SetItems([]seckill.Item{{SKUID: 38, Title: "EU 38", PriceCents: 1, TotalStock: 1}, {SKUID: 39, Title: "EU 39", PriceCents: 1, TotalStock: 1}})
	require.NoError(t, several.Validate())
	for bad, msg := range map[string]string{
		"": "not blank", "   ": "not blank", strings.Repeat("x", 201): "1 to 200 bytes",
		"a\x00b": "control characters", "two\nlines": "control characters", "tab\there": "control characters", "\xff": "UTF-8",
	} {
		s := single
		s.Title = bad
		err := s.Validate()
		require.Equal(t, seckill.EINVALID, seckill.ErrorCode(err), "%q", bad)
		require.Contains(t, seckill.ErrorMessage(err), "title must be", "%q", bad)
		require.Contains(t, seckill.ErrorMessage(err), msg, "%q", bad)

		s = several
		s.Items = slices.Clone(several.Items)
		s.Items[1].Title = bad
		err = s.Validate()
		require.Contains(t, seckill.ErrorMessage(err), "items[1].title must be", "%q", bad)
	}
}

// The session change rules, on the domain alone: what each action does,
// and what the session's state forbids.
func TestSessionChangeApplyTo(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	upcoming := seckill.Session{ID: 4, SKUID: 9, Title: "t", PriceCents: 100, TotalStock: 10, PerUserLimit: 1,
		StartAt: now.Add(time.Hour), EndAt: now.Add(2 * time.Hour)}
	live := upcoming
	live.StartAt = now.Add(-time.Minute)
	ended := upcoming
	ended.StartAt, ended.EndAt = now.Add(-2*time.Hour), now.Add(-time.Hour)
	title := "new"
	reserved, firstCome := seckill.ModeReserved, seckill.ModeFirstCome
	registering := upcoming // a reserved sale whose registration opens in 10 minutes
	registering.Mode, registering.RegisterFrom, registering.RegisterUntil = reserved, now.Add(10*time.Minute), upcoming.StartAt
	open := registering
	open.RegisterFrom = now.Add(-time.Minute)
	halfway, late := now.Add(30*time.Minute), upcoming.StartAt.Add(time.Minute)
	pausedEarlier := live // paused a minute ago: the pause keeps its beginning
	pausedEarlier.Paused, pausedEarlier.PausedAt = true, now.Add(-time.Minute)
	preheated := upcoming // a first-come sale its preheat loaded
	preheated.PreheatedAt = now.Add(-time.Minute)
	draw := seckill.ModeDraw
	sizes := live // a sale of two sizes, 10 units in all
	sizes.SetItems([]seckill.Item{{SKUID: 38, Title: "EU 38", PriceCents: 100, TotalStock: 4}, {SKUID: 39, Title: "EU 39", PriceCents: 120, TotalStock: 6}})
	price := int64(150)
	sizesLater := sizes // before its start
	sizesLater.StartAt = upcoming.StartAt
	for _, c := range []struct {
		name  string
		s     seckill.Session
		ch    seckill.SessionChange
		want  func(s seckill.Session) seckill.Session
		added int
		code  string
	}{
		{"pause", live, seckill.SessionChange{Action: seckill.ActionPause}, func(s seckill.Session) seckill.Session {
			s.Paused, s.PausedAt = true, now
			return s
		}, 0, ""},
		{"pause again", pausedEarlier, seckill.SessionChange{Action: seckill.ActionPause}, func(s seckill.Session) seckill.Session { return s }, 0, ""},
		{"resume", pausedEarlier, seckill.SessionChange{Action: seckill.ActionResume}, func(s seckill.Session) seckill.Session {
			s.Paused, s.PausedAt = false, time.Time{}
			return s
		}, 0, ""},
		{"turn a draw once preheated", preheated, seckill.SessionChange{Action: seckill.ActionUpdate, Update: &seckill.SessionUpdate{Mode: &draw}}, nil, 0, seckill.ECONFLICT},
		{"a title once preheated", preheated, seckill.SessionChange{Action: seckill.ActionUpdate, Update: &seckill.SessionUpdate{Title: &title}},
			func(s seckill.Session) seckill.Session { s.Title = title; return s }, 0, ""},
		{"resume an ended one", ended, seckill.SessionChange{Action: seckill.ActionResume}, func(s seckill.Session) seckill.Session { return s }, 0, ""},
		{"end early", live, seckill.SessionChange{Action: seckill.ActionEnd}, func(s seckill.Session) seckill.Session { s.EndAt = now; return s }, 0, ""},
		{"end before the start", upcoming, seckill.SessionChange{Action: seckill.ActionEnd}, func(s seckill.Session) seckill.Session {
			s.StartAt, s.EndAt = now.Add(-time.Millisecond), now
			return s
		}, 0, ""},
		{"add stock", live, seckill.SessionChange{Action: seckill.ActionAddStock, Add: 5}, func(s seckill.Session) seckill.Session { s.TotalStock = 15; return s }, 5, ""},
		{"add past the cap", live, seckill.SessionChange{Action: seckill.ActionAddStock, Add: seckill.MaxAddStock}, nil, 0, seckill.EINVALID},
		{"update before the start", upcoming, seckill.SessionChange{Action: seckill.ActionUpdate, Update: &seckill.SessionUpdate{Title: &title}},
			func(s seckill.Session) seckill.Session { s.Title = title; return s }, 0, ""},
		{"update once started", live, seckill.SessionChange{Action: seckill.ActionUpdate, Update: &seckill.SessionUpdate{Title: &title}}, nil, 0, seckill.ECONFLICT},
		{"pause an ended one", ended, seckill.SessionChange{Action: seckill.ActionPause}, nil, 0, seckill.ECONFLICT},
		{"turn reserved before the start", upcoming, seckill.SessionChange{Action: seckill.ActionUpdate, Update: &seckill.SessionUpdate{Mode: &reserved}},
			func(s seckill.Session) seckill.Session {
				s.Mode, s.RegisterFrom, s.RegisterUntil = reserved, now, s.StartAt
				return s
			}, 0, ""},
		{"move a window not open yet", registering, seckill.SessionChange{Action: seckill.ActionUpdate,
			Update: &seckill.SessionUpdate{RegisterUntil: &halfway}},
			func(s seckill.Session) seckill.Session { s.RegisterUntil = halfway; return s }, 0, ""},
		{"turn first come before registration opens", registering, seckill.SessionChange{Action: seckill.ActionUpdate,
			Update: &seckill.SessionUpdate{Mode: &firstCome}},
			func(s seckill.Session) seckill.Session {
				s.Mode, s.RegisterFrom, s.RegisterUntil = firstCome, time.Time{}, time.Time{}
				return s
			}, 0, ""},
		{"move the window once registration opened", open, seckill.SessionChange{Action: seckill.ActionUpdate,
			Update: &seckill.SessionUpdate{RegisterUntil: &halfway}}, nil, 0, seckill.ECONFLICT},
		{"turn first come once registration opened", open, seckill.SessionChange{Action: seckill.ActionUpdate,
			Update: &seckill.SessionUpdate{Mode: &firstCome}}, nil, 0, seckill.ECONFLICT},
		{"a title once registration opened", open, seckill.SessionChange{Action: seckill.ActionUpdate, Update: &seckill.SessionUpdate{Title: &title}},
			func(s seckill.Session) seckill.Session { s.Title = title; return s }, 0, ""},
		{"add stock to a size", sizes, seckill.SessionChange{Action: seckill.ActionAddStock, Add: 5, SKUID: 39}, func(s seckill.Session) seckill.Session {
			s.TotalStock = 15
			s.Items = []seckill.Item{s.Items[0], {SKUID: 39, Title: "EU 39", PriceCents: 120, TotalStock: 11}}
			return s
		}, 5, ""},
		{"add stock to no size", sizes, seckill.SessionChange{Action: seckill.ActionAddStock, Add: 5}, nil, 0, seckill.EINVALID},
		{"add stock to a size not sold", sizes, seckill.SessionChange{Action: seckill.ActionAddStock, Add: 5, SKUID: 40}, nil, 0, seckill.EINVALID},
		{"a sale price for sizes", sizesLater, seckill.SessionChange{Action: seckill.ActionUpdate, Update: &seckill.SessionUpdate{PriceCents: &price}},
			nil, 0, seckill.EINVALID},
		{"close registration after the start", registering, seckill.SessionChange{Action: seckill.ActionUpdate,
			Update: &seckill.SessionUpdate{RegisterUntil: &late}}, nil, 0, seckill.EINVALID},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			added, err := c.ch.ApplyTo(&s, now)
			if c.code != "" {
				require.Equal(t, c.code, seckill.ErrorCode(err), "%v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want(c.s), s)
			require.Equal(t, c.added, added)
		})
	}
}
