package mysql

import (
	"encoding/hex"
	"time"

	"github.com/seckill/seckill"
)

// The row types mirror migrations/*.sql; GORM only maps them, it never
// creates or alters tables (goose owns the schema).

type sessionRow struct {
	ID             int64 `gorm:"primaryKey"`
	SKUID          int64 `gorm:"column:sku_id"`
	Title          string
	PriceCents     int64
	Currency       string
	TotalStock     int
	Stock          int
	PerUserLimit   int
	StartAt        time.Time
	EndAt          time.Time
	RequireTicket  bool
	RequireCaptcha bool
	Paused         bool
	Mode           string
	RegisterFrom   *time.Time
	RegisterUntil  *time.Time
	// A draw's (00015_draw.sql, 00018_draw_sealed.sql): the seed sealed
	// by the worker's key until the draw, readable (DrawSeed) from the
	// draw on; a sale made before sealing existed holds it readable until
	// the worker seals it.
	RightTTLSeconds   int `gorm:"column:right_ttl_seconds"`
	DrawSeed          []byte
	DrawSeedSealed    []byte
	DrawCommitment    *string
	RegistrantsCount  *int
	RegistrantsDigest *string
	DrawnAt           *time.Time
	DrawnStock        *int
	CreatedAt         time.Time
	UpdatedAt         time.Time

	// 00019_draw_pause.sql: see seckill.Session.
	PreheatedAt   *time.Time
	PausedAt      *time.Time
	RightsVersion int
}

func (sessionRow) TableName() string { return "sessions" }

type sessionAuditRow struct {
	ID        int64 `gorm:"primaryKey"`
	SessionID int64
	Action    string
	Actor     string
	ActorRole string
	FromAddr  string
	RequestID string
	Detail    string
	CreatedAt time.Time
}

func (sessionAuditRow) TableName() string { return "session_audit" }

// sessionCreateKeyRow is the sale an Idempotency-Key created, with its
// body's fingerprint.
type sessionCreateKeyRow struct {
	RequestID   string `gorm:"primaryKey"`
	SessionID   int64
	Fingerprint string
	CreatedAt   time.Time
}

func (sessionCreateKeyRow) TableName() string { return "session_create_keys" }

func (r *sessionRow) domain() *seckill.Session {
	s := &seckill.Session{
		ID: r.ID, SKUID: r.SKUID, Title: r.Title, PriceCents: r.PriceCents, Currency: r.Currency,
		TotalStock: r.TotalStock, PerUserLimit: r.PerUserLimit,
		StartAt: r.StartAt.UTC(), EndAt: r.EndAt.UTC(), RequireTicket: r.RequireTicket, RequireCaptcha: r.RequireCaptcha, Paused: r.Paused,
		Mode: seckill.SessionMode(r.Mode), RegisterFrom: utcOrZero(r.RegisterFrom), RegisterUntil: utcOrZero(r.RegisterUntil),
		RightTTLSeconds: r.RightTTLSeconds, DrawnAt: utcOrZero(r.DrawnAt),
		DrawCommitment: deref(r.DrawCommitment), RegistrantsCount: r.RegistrantsCount, RegistrantsDigest: deref(r.RegistrantsDigest),
	}
	s.PreheatedAt, s.PausedAt, s.RightsVersion = utcOrZero(r.PreheatedAt), utcOrZero(r.PausedAt), r.RightsVersion
	if r.DrawnAt != nil {
		s.DrawSeed, s.DrawnStock = hex.EncodeToString(r.DrawSeed), deref(r.DrawnStock)
	}
	return s
}

// deref reads a nullable column: NULL is the zero value.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// utcOrZero reads a nullable time column.
func utcOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// nullTime writes one: the zero time is NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

type orderRow struct {
	ID          int64 `gorm:"primaryKey"`
	OrderNo     string
	SessionID   int64
	SKUID       int64 `gorm:"column:sku_id"`
	Title       string
	UserID      int64
	Quantity    int
	AmountCents int64
	Currency    string
	Status      string
	Reason      string
	TraceID     string
	PayDeadline *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (orderRow) TableName() string { return "orders" }

func (r *orderRow) domain() *seckill.Order {
	o := &seckill.Order{
		OrderNo: r.OrderNo, SessionID: r.SessionID, SKUID: r.SKUID, Title: r.Title, UserID: r.UserID,
		Quantity: r.Quantity, AmountCents: r.AmountCents, Currency: r.Currency, Status: seckill.Status(r.Status),
		CreatedAt: r.CreatedAt.UTC(), TraceID: r.TraceID, UpdatedAt: r.UpdatedAt.UTC(),
	}
	if r.PayDeadline != nil {
		o.PayDeadline = r.PayDeadline.UTC()
	}
	return o
}

type slotRow struct {
	SessionID int64 `gorm:"primaryKey"`
	UserID    int64 `gorm:"primaryKey"`
	Slot      int   `gorm:"primaryKey"`
	OrderNo   string
}

func (slotRow) TableName() string { return "order_slots" }

// Payment row statuses.
const (
	// paymentReceived: written by the webhook before it signals the order's
	// workflow, so a payment is in MySQL even if the workflow can never
	// record it; ApplyPayment turns it into one of the others.
	paymentReceived      = "RECEIVED"
	paymentCaptured      = "CAPTURED"
	paymentRefundPending = "REFUND_PENDING"
	paymentRefunded      = "REFUNDED"
)

type paymentRow struct {
	ID          int64 `gorm:"primaryKey"`
	PaymentID   string
	EventID     string
	OrderNo     string
	AmountCents int64
	Currency    string
	Status      string
	TraceID     string
	RefundID    *string
	// Refund retries (REFUND_PENDING only): failed runs, when the next run
	// is due, the last failure, and when the refund was parked.
	RefundAttempts int
	RefundNextAt   *time.Time
	RefundError    string
	RefundParkedAt *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

func (paymentRow) TableName() string { return "payments" }

// payment is the row as the payment it records.
func (r *paymentRow) payment() *seckill.Payment {
	return &seckill.Payment{EventID: r.EventID, PaymentID: r.PaymentID, OrderNo: r.OrderNo, AmountCents: r.AmountCents,
		Currency: r.Currency, TraceID: r.TraceID}
}

// refund is the payment as the refund that gives it back.
func (r *paymentRow) refund() seckill.Refund {
	return seckill.Refund{PaymentID: r.PaymentID, OrderNo: r.OrderNo, AmountCents: r.AmountCents, Currency: r.Currency, TraceID: r.TraceID}
}

type ledgerRow struct {
	ID         int64 `gorm:"primaryKey"`
	OrderNo    string
	SessionID  int64
	FromStatus string
	ToStatus   string
	Quantity   int
	StockDelta int
	Reason     string
	TraceID    string
	CreatedAt  time.Time
}

func (ledgerRow) TableName() string { return "order_ledger" }

type blockedRow struct {
	UserID    int64 `gorm:"primaryKey;autoIncrement:false"`
	Reason    string
	CreatedAt time.Time
}

func (blockedRow) TableName() string { return "blocked_users" }
