package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill"
)

// SessionSnapshot reads the Redis side of a session for reconcile with one
// script: stock, reservations, pending starts and per-user marks at one
// instant, so an admission or release running meanwhile is either wholly in
// it or wholly out.
func (g *Gate) SessionSnapshot(ctx context.Context, sessionID int64) (*seckill.RedisSnapshot, error) {
	res, err := idempotent(ctx, func(ctx context.Context) ([]any, error) {
		return snapshotScript.Run(ctx, g.rdb, g.keys(sessionID).script()).Slice()
	})
	if err != nil {
		return nil, unavailable(err)
	}
	if len(res) != 7 {
		return nil, fmt.Errorf("snapshot script returned %d values", len(res))
	}
	registrants, _ := res[5].(int64)
	snap := &seckill.RedisSnapshot{Reservations: map[string]int{}, ReservedAt: map[string]time.Time{}, Registrants: int(registrants),
		Items: map[int64]int{}, ReservedItem: map[string]int64{}}
	items, _ := res[6].([]any)
	for i := 0; i+1 < len(items); i += 2 {
		sku, err1 := strconv.ParseInt(fmt.Sprint(items[i]), 10, 64)
		n, err2 := strconv.Atoi(fmt.Sprint(items[i+1]))
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("session %d item stock %v=%v", sessionID, items[i], items[i+1])
		}
		snap.Items[sku] = n
	}
	if s, ok := res[0].(string); ok {
		if snap.Stock, err = strconv.Atoi(s); err != nil {
			return nil, fmt.Errorf("session %d stock %q: %w", sessionID, s, err)
		}
		snap.Preheated = true
	}
	reserved, reservedSlots := map[int64]int{}, map[int64]int64{}
	resv, _ := res[1].([]any)
	for i := 0; i+1 < len(resv); i += 2 {
		no, _ := resv[i].(string)
		raw, _ := resv[i+1].(string)
		r, err := parseReservation(sessionID, no, raw)
		if err != nil {
			return nil, err
		}
		snap.Reservations[no] = r.Quantity
		snap.ReservedAt[no] = r.ReservedAt
		if r.SKUID != 0 {
			snap.ReservedItem[no] = r.SKUID
		}
		reserved[r.UserID] += r.Quantity
		reservedSlots[r.UserID] |= slotsMask(r.Slots)
	}
	n, _ := res[2].(int64)
	snap.Pending = int(n)
	if s, ok := res[3].(string); ok {
		ms, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("session %d oldest pending start %q: %w", sessionID, s, err)
		}
		snap.OldestPending = time.UnixMilli(int64(ms)).UTC()
	}
	// The per-user marks (units and slots) must be exactly what the user's
	// live reservations hold: the admission and release scripts keep them
	// together, so any difference is corruption.
	marks, _ := res[4].([]any)
	seen := map[int64]bool{}
	for i := 0; i+1 < len(marks); i += 2 {
		field, _ := marks[i].(string)
		v, _ := marks[i+1].(string)
		user, isSlots := strings.CutSuffix(field, ":slots")
		id, err1 := strconv.ParseInt(user, 10, 64)
		n, err2 := strconv.ParseInt(v, 10, 64)
		if err1 != nil || err2 != nil {
			snap.MarkMismatches++
			continue
		}
		seen[id] = true
		if (isSlots && n != reservedSlots[id]) || (!isSlots && int(n) != reserved[id]) {
			snap.MarkMismatches++
		}
	}
	for id := range reserved {
		if !seen[id] {
			snap.MarkMismatches++
		}
	}
	return snap, nil
}
