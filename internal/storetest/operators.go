package storetest

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/seckill/seckill"
)

// storedOperator is a named token as mysql.DB keeps it: the hash, never
// the token.
type storedOperator struct {
	seckill.OperatorToken
	hash string
}

var _ OperatorStore = (*MemStore)(nil)

// SetOperatorClock makes the operator calls stamp at (created, last used,
// revoked) from now on, as mysql.DB.StopClockForTest does.
func (s *MemStore) SetOperatorClock(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.operatorClock = at.UTC()
}

func (s *MemStore) operatorNow() time.Time {
	if s.operatorClock.IsZero() {
		return time.Now().UTC().Truncate(time.Microsecond)
	}
	return s.operatorClock
}

// AddOperator mirrors mysql.DB.AddOperator: an active name is a CONFLICT,
// a revoked one is replaced.
func (s *MemStore) AddOperator(_ context.Context, name string, role seckill.Role, tokenHash string) error {
	if err := seckill.CheckOperatorName(name); err != nil {
		return err
	}
	if _, err := seckill.ParseRole(string(role)); err != nil {
		return err
	}
	if len(tokenHash) != 64 {
		return seckill.Errorf(seckill.EINVALID, "an operator's token is stored as its SHA-256 in hex, not as given")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.operators[name]; ok && o.RevokedAt == nil {
		return seckill.Errorf(seckill.ECONFLICT, "operator %q exists and is active: revoke it first", name)
	}
	for n, o := range s.operators {
		if o.hash == tokenHash && n != name {
			return seckill.Errorf(seckill.ECONFLICT, "operator %q: that token belongs to another operator; make a new one", name)
		}
	}
	s.operators[name] = &storedOperator{seckill.OperatorToken{Name: name, Role: role, CreatedAt: s.operatorNow()}, tokenHash}
	return nil
}

// Operator mirrors mysql.DB.Operator: the active operator of the hash,
// its use recorded at most once a minute.
func (s *MemStore) Operator(_ context.Context, tokenHash string) (*seckill.Operator, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.operators {
		if o.hash != tokenHash || o.RevokedAt != nil {
			continue
		}
		if now := s.operatorNow(); o.LastUsed == nil || o.LastUsed.Before(now.Add(-time.Minute)) {
			o.LastUsed = &now
		}
		return &seckill.Operator{Name: o.Name, Role: o.Role, Via: seckill.CredentialToken}, nil
	}
	return nil, seckill.Errorf(seckill.ENOTFOUND, "no active operator has this token")
}

// Operators lists every named token, active and revoked, by name.
func (s *MemStore) Operators(context.Context) ([]seckill.OperatorToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]seckill.OperatorToken, 0, len(s.operators))
	for _, o := range s.operators {
		out = append(out, o.OperatorToken)
	}
	slices.SortFunc(out, func(a, b seckill.OperatorToken) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// RevokeOperator mirrors mysql.DB.RevokeOperator: NOT_FOUND unless the
// name is active.
func (s *MemStore) RevokeOperator(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.operators[name]
	if !ok || o.RevokedAt != nil {
		return seckill.Errorf(seckill.ENOTFOUND, "no active operator %q", name)
	}
	now := s.operatorNow()
	o.RevokedAt = &now
	return nil
}
