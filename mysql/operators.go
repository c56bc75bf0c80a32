package mysql

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

type operatorRow struct {
	ID         int64 `gorm:"primaryKey"`
	Name       string
	Role       string
	TokenHash  string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

func (operatorRow) TableName() string { return "operators" }

// lastUseEvery is how stale an operator's last_used_at may get: it says
// whether a token is still in use, which a minute's precision answers, and
// a script calling the admin API every second then writes once a minute,
// not on every call.
const lastUseEvery = time.Minute

// checkNewOperator refuses what no operator may be stored as. The hash is
// checked for its length too, so a caller handing over the token itself
// instead of its hash is refused rather than storing a secret in the clear.
func checkNewOperator(name string, role seckill.Role, tokenHash string) error {
	if err := seckill.CheckOperatorName(name); err != nil {
		return err
	}
	if _, err := seckill.ParseRole(string(role)); err != nil {
		return err
	}
	if len(tokenHash) != 64 {
		return seckill.Errorf(seckill.EINVALID, "an operator's token is stored as its SHA-256 in hex (seckill.HashOperatorToken), not as given")
	}
	return nil
}

// AddOperator stores a named token's hash for the operator name with
// role. An active operator of that name is a CONFLICT (revoke it first:
// a name stands for one token at a time, so the audit's "who" stays one
// person); a revoked one is replaced, so a person whose token leaked gets
// their name back with a new token.
func (db *DB) AddOperator(ctx context.Context, name string, role seckill.Role, tokenHash string) error {
	if err := checkNewOperator(name, role, tokenHash); err != nil {
		return err
	}
	now := db.now()
	g := db.gorm.WithContext(ctx)
	// No transaction: a locking read of a missing name takes a gap lock
	// that two concurrent adds would deadlock on. The name's unique key
	// settles a race instead.
	res := g.Model(&operatorRow{}).Where("name = ? AND revoked_at IS NOT NULL", name).
		Updates(map[string]any{"role": string(role), "token_hash": tokenHash, "created_at": now, "last_used_at": nil, "revoked_at": nil})
	if res.Error == nil && res.RowsAffected == 0 {
		res = g.Create(&operatorRow{Name: name, Role: string(role), TokenHash: tokenHash, CreatedAt: now})
	}
	if isDuplicate(res.Error) {
		return db.operatorConflict(ctx, name)
	}
	return res.Error
}

// operatorConflict says which unique key an AddOperator of name ran into.
func (db *DB) operatorConflict(ctx context.Context, name string) error {
	var n int64
	if err := db.gorm.WithContext(ctx).Model(&operatorRow{}).Where("name = ? AND revoked_at IS NULL", name).Count(&n).Error; err != nil {
		return err
	}
	if n > 0 {
		return seckill.Errorf(seckill.ECONFLICT, "operator %q exists and is active: revoke it first", name)
	}
	return seckill.Errorf(seckill.ECONFLICT, "operator %q: that token belongs to another operator; make a new one", name)
}

// Operator is the active operator whose named token hashes to tokenHash:
// what an admin call's bearer token proves. NOT_FOUND for a token nobody
// has, or whose operator was revoked. Its use is recorded, at most once
// per lastUseEvery.
func (db *DB) Operator(ctx context.Context, tokenHash string) (*seckill.Operator, error) {
	g := db.gorm.WithContext(ctx)
	var row operatorRow
	err := g.Where("token_hash = ? AND revoked_at IS NULL", tokenHash).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "no active operator has this token")
	} else if err != nil {
		return nil, err
	}
	now := db.now()
	if stale := now.Add(-lastUseEvery); row.LastUsedAt == nil || row.LastUsedAt.Before(stale) {
		// Conditional again: concurrent calls of one operator write once.
		err := g.Model(&operatorRow{}).Where("id = ? AND (last_used_at IS NULL OR last_used_at < ?)", row.ID, stale).
			Update("last_used_at", now).Error
		if err != nil {
			return nil, err
		}
	}
	return &seckill.Operator{Name: row.Name, Role: seckill.Role(row.Role), Via: seckill.CredentialToken}, nil
}

// Operators lists every named token, active and revoked, by name.
func (db *DB) Operators(ctx context.Context) ([]seckill.OperatorToken, error) {
	var rows []operatorRow
	if err := db.gorm.WithContext(ctx).Order("name").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]seckill.OperatorToken, len(rows))
	for i, r := range rows {
		out[i] = seckill.OperatorToken{Name: r.Name, Role: seckill.Role(r.Role), CreatedAt: r.CreatedAt.UTC(),
			LastUsed: utc(r.LastUsedAt), RevokedAt: utc(r.RevokedAt)}
	}
	return out, nil
}

// RevokeOperator ends the named operator's token at once. The row stays
// (listed as revoked) until the name is given again. NOT_FOUND when no
// active operator has the name.
func (db *DB) RevokeOperator(ctx context.Context, name string) error {
	res := db.gorm.WithContext(ctx).Model(&operatorRow{}).Where("name = ? AND revoked_at IS NULL", name).
		Update("revoked_at", db.now())
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return seckill.Errorf(seckill.ENOTFOUND, "no active operator %q", name)
	}
	return nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
