package redis

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill"
)

// ReservationRecord is a reservation as a session's resv hash stores it
// under its order number: "user|qty|mask|unix ms|trace". admit.lua writes
// it and release.lua reads its first three fields; in Go every writer and
// reader goes through Encode and ParseReservationRecord (a test runs both
// scripts against them). The trace id comes last and may contain '|'.
type ReservationRecord struct {
	UserID   int64
	Quantity int
	// Mask is the slots the reservation holds (bit i = slot i+1), as the
	// script hands them out.
	Mask int64
	// At is when it was reserved, to the millisecond.
	At      time.Time
	TraceID string
}

// NewReservationRecord is the record of r.
func NewReservationRecord(r *seckill.Reservation) ReservationRecord {
	return ReservationRecord{UserID: r.UserID, Quantity: r.Quantity, Mask: slotsMask(r.Slots), At: r.ReservedAt, TraceID: r.TraceID}
}

// Encode is the record as the scripts store it.
func (r ReservationRecord) Encode() string {
	return fmt.Sprintf("%d|%d|%d|%d|%s", r.UserID, r.Quantity, r.Mask, r.At.UnixMilli(), r.TraceID)
}

// ParseReservationRecord decodes what Encode or admit.lua wrote.
func ParseReservationRecord(raw string) (ReservationRecord, error) {
	f := strings.SplitN(raw, "|", 5)
	if len(f) != 5 {
		return ReservationRecord{}, fmt.Errorf("malformed reservation record %q", raw)
	}
	user, err1 := strconv.ParseInt(f[0], 10, 64)
	qty, err2 := strconv.Atoi(f[1])
	mask, err3 := strconv.ParseInt(f[2], 10, 64)
	ms, err4 := strconv.ParseInt(f[3], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return ReservationRecord{}, fmt.Errorf("reservation record %q: %w", raw, err)
	}
	return ReservationRecord{UserID: user, Quantity: qty, Mask: mask, At: time.UnixMilli(ms).UTC(), TraceID: f[4]}, nil
}

// Reservation is the record as the reservation of order orderNo in session sessionID.
func (r ReservationRecord) Reservation(sessionID int64, orderNo string) *seckill.Reservation {
	return &seckill.Reservation{
		OrderNo: orderNo, SessionID: sessionID, UserID: r.UserID, Quantity: r.Quantity,
		Slots: maskSlots(r.Mask), ReservedAt: time.UnixMilli(r.At.UnixMilli()).UTC(), TraceID: r.TraceID,
	}
}

// parseReservation decodes the record of order orderNo in session sessionID.
func parseReservation(sessionID int64, orderNo, raw string) (*seckill.Reservation, error) {
	rec, err := ParseReservationRecord(raw)
	if err != nil {
		return nil, fmt.Errorf("reservation %s: %w", orderNo, err)
	}
	return rec.Reservation(sessionID, orderNo), nil
}
