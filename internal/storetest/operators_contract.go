package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// OperatorStore is what TestOperatorStore checks: the operators' named
// tokens, which the admin API's authentication reads.
type OperatorStore interface {
	AddOperator(ctx context.Context, name string, role seckill.Role, tokenHash string) error
	Operator(ctx context.Context, tokenHash string) (*seckill.Operator, error)
	Operators(ctx context.Context) ([]seckill.OperatorToken, error)
	RevokeOperator(ctx context.Context, name string) error
}

// NewOperatorStore returns a store with no operator, and what pins the time
// it stamps from then on.
type NewOperatorStore func(t *testing.T) (OperatorStore, func(at time.Time))

// listed is the store's named token of name; it must be listed.
func listed(t *testing.T, s OperatorStore, name string) seckill.OperatorToken {
	t.Helper()
	all, err := s.Operators(ctx)
	require.NoError(t, err)
	for _, o := range all {
		if o.Name == name {
			return o
		}
	}
	t.Fatalf("operator %q is not listed in %+v", name, all)
	return seckill.OperatorToken{}
}

func requireCode(t *testing.T, code string, err error, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, code, seckill.ErrorCode(err), append([]any{"%v", err}, msgAndArgs...)...)
}

// TestOperatorStore runs the contract of the operators' named tokens
// against the stores newStore makes.
func TestOperatorStore(t *testing.T, newStore NewOperatorStore) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	hash := seckill.HashOperatorToken
	// alice is a store whose clock reads t0, holding operator "alice" of
	// role, whose token is "a".
	alice := func(t *testing.T, role seckill.Role) (OperatorStore, func(time.Time)) {
		s, clock := newStore(t)
		clock(t0)
		require.NoError(t, s.AddOperator(ctx, "alice", role, hash("a")))
		return s, clock
	}

	t.Run("AddedTokenFindsItsOperator", func(t *testing.T) {
		s, _ := alice(t, seckill.RoleOperator)
		got, err := s.Operator(ctx, hash("a"))
		require.NoError(t, err)
		require.Equal(t, &seckill.Operator{Name: "alice", Role: seckill.RoleOperator, Via: seckill.CredentialToken}, got)
		_, err = s.Operator(ctx, hash("nobody's"))
		requireCode(t, seckill.ENOTFOUND, err)
		o := listed(t, s, "alice")
		require.Equal(t, seckill.RoleOperator, o.Role)
		require.True(t, t0.Equal(o.CreatedAt), "created %v", o.CreatedAt)
		require.Nil(t, o.RevokedAt)
	})

	t.Run("BadNamesRolesAndHashesAreRefused", func(t *testing.T) {
		s, _ := newStore(t)
		for _, c := range []struct {
			name string
			role seckill.Role
			hash string
		}{
			{"", seckill.RoleViewer, hash("a")},
			{"has space", seckill.RoleViewer, hash("a")},
			{"bob", "root", hash("a")},
			{"bob", "", hash("a")},
			{"bob", seckill.RoleViewer, "skop_not-a-hash"}, // the token itself, never stored
		} {
			requireCode(t, seckill.EINVALID, s.AddOperator(ctx, c.name, c.role, c.hash), "%+v", c)
		}
		all, err := s.Operators(ctx)
		require.NoError(t, err)
		require.Empty(t, all)
	})

	t.Run("AnActiveNameIsAConflict", func(t *testing.T) {
		s, _ := alice(t, seckill.RoleViewer)
		err := s.AddOperator(ctx, "alice", seckill.RoleAdmin, hash("b"))
		requireCode(t, seckill.ECONFLICT, err)
		require.ErrorContains(t, err, "revoke it first")
		err = s.AddOperator(ctx, "bob", seckill.RoleAdmin, hash("a"))
		requireCode(t, seckill.ECONFLICT, err, "another operator's token")
		got, err := s.Operator(ctx, hash("a"))
		require.NoError(t, err)
		require.Equal(t, seckill.RoleViewer, got.Role, "the first stays as it was")
		_, err = s.Operator(ctx, hash("b"))
		requireCode(t, seckill.ENOTFOUND, err)
	})

	t.Run("RevokeEndsTheToken", func(t *testing.T) {
		s, clock := alice(t, seckill.RoleAdmin)
		clock(t0.Add(time.Hour))
		require.NoError(t, s.RevokeOperator(ctx, "alice"))
		_, err := s.Operator(ctx, hash("a"))
		requireCode(t, seckill.ENOTFOUND, err)
		requireCode(t, seckill.ENOTFOUND, s.RevokeOperator(ctx, "alice"), "revoked twice")
		requireCode(t, seckill.ENOTFOUND, s.RevokeOperator(ctx, "nobody"))
		o := listed(t, s, "alice")
		require.NotNil(t, o.RevokedAt, "a revoked operator is still listed")
		require.True(t, t0.Add(time.Hour).Equal(*o.RevokedAt), "revoked %v", o.RevokedAt)
	})

	t.Run("ARevokedNameIsGivenAgain", func(t *testing.T) {
		s, clock := alice(t, seckill.RoleAdmin)
		_, err := s.Operator(ctx, hash("a"))
		require.NoError(t, err)
		require.NoError(t, s.RevokeOperator(ctx, "alice"))
		clock(t0.Add(time.Hour))
		require.NoError(t, s.AddOperator(ctx, "alice", seckill.RoleViewer, hash("b")))
		_, err = s.Operator(ctx, hash("a"))
		requireCode(t, seckill.ENOTFOUND, err, "the old token stays dead")
		all, err := s.Operators(ctx)
		require.NoError(t, err)
		require.Len(t, all, 1, "one row per name")
		o := all[0]
		require.Equal(t, seckill.RoleViewer, o.Role)
		require.True(t, t0.Add(time.Hour).Equal(o.CreatedAt), "created %v", o.CreatedAt)
		require.Nil(t, o.RevokedAt)
		require.Nil(t, o.LastUsed, "the new token was never used")
		got, err := s.Operator(ctx, hash("b"))
		require.NoError(t, err)
		require.Equal(t, seckill.RoleViewer, got.Role)
	})

	t.Run("UseIsRecordedAtMostOnceAMinute", func(t *testing.T) {
		s, clock := alice(t, seckill.RoleViewer)
		require.Nil(t, listed(t, s, "alice").LastUsed)
		for _, c := range []struct {
			at, want time.Duration
		}{{time.Second, time.Second}, {30 * time.Second, time.Second}, {61 * time.Second, time.Second},
			{62 * time.Second, 62 * time.Second}} {
			clock(t0.Add(c.at))
			_, err := s.Operator(ctx, hash("a"))
			require.NoError(t, err)
			used := listed(t, s, "alice").LastUsed
			require.NotNil(t, used)
			require.True(t, t0.Add(c.want).Equal(*used), "used at +%v: last use %v, want +%v", c.at, used, c.want)
		}
	})

	t.Run("ListedByName", func(t *testing.T) {
		s, _ := newStore(t)
		for i, name := range []string{"carol", "alice@example.com", "bob", "Zed"} {
			require.NoError(t, s.AddOperator(ctx, name, seckill.RoleViewer, hash(name)), "#%d", i)
		}
		require.NoError(t, s.RevokeOperator(ctx, "bob"))
		all, err := s.Operators(ctx)
		require.NoError(t, err)
		names := make([]string, len(all))
		for i, o := range all {
			names[i] = o.Name
		}
		require.Equal(t, []string{"Zed", "alice@example.com", "bob", "carol"}, names, "byte order, revoked included")
	})
}
