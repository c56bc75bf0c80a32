package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// Concurrent adds of one name store one operator; the others are told to
// revoke it first, none waits on a deadlock. The contract's cases are in
// contract_test.go (TestOperatorStoreContract).
func TestConcurrentAddsOfOneNameStoreOne(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.DB.AddOperator(ctx, "alice", seckill.RoleAdmin, seckill.HashOperatorToken(fmt.Sprint(i)))
		}()
	}
	wg.Wait()
	added := 0
	for _, err := range errs {
		if err == nil {
			added++
			continue
		}
		require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "%v", err)
	}
	require.Equal(t, 1, added)
	all, err := e.DB.Operators(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
}

// The table holds the token's hash, never the token.
func TestOnlyTheTokensHashIsStored(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	token, hash, err := seckill.NewOperatorToken()
	require.NoError(t, err)
	require.NoError(t, e.DB.AddOperator(ctx, "alice", seckill.RoleViewer, hash))
	var stored string
	var holding int
	require.NoError(t, rawDB(t, e).QueryRowContext(ctx, `SELECT token_hash,
		(SELECT COUNT(*) FROM operators WHERE INSTR(CONCAT_WS('|', name, role, token_hash), ?) > 0)
		FROM operators WHERE name = 'alice'`, token).Scan(&stored, &holding))
	require.Equal(t, hash, stored)
	require.Zero(t, holding, "a row holds the token")
}

func rawDB(t *testing.T, e *testenv.Env) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// A session's audit keeps the role the operator had, in its own column,
// for a session change and for an operator's refund alike.
func TestAuditRecordsTheActorRole(t *testing.T) {
	e, sess := store(t, 2, 1)
	ctx := context.Background()
	_, applied, err := e.DB.ChangeSession(ctx, &seckill.SessionChange{SessionID: sess.ID, Action: seckill.ActionPause,
		Actor: "olga", ActorRole: seckill.RoleOperator, From: "127.0.0.1", RequestID: "pause-1"})
	require.NoError(t, err)
	require.True(t, applied)

	req := request(sess, fmt.Sprintf("%d-paid", sess.ID), 7, 1, 1)
	_, err = e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
	require.NoError(t, err)
	_, _, err = e.DB.ApplyPayment(ctx, &seckill.Payment{EventID: "evt-1", PaymentID: "pay-1", OrderNo: req.OrderNo, AmountCents: sess.PriceCents})
	require.NoError(t, err)
	_, applied, err = e.DB.RefundOrder(ctx, &seckill.SessionChange{Action: seckill.ActionRefund, OrderNo: req.OrderNo,
		Reason: "customer asked", Actor: "ada", ActorRole: seckill.RoleAdmin, From: "127.0.0.1", RequestID: "refund-1"})
	require.NoError(t, err)
	require.True(t, applied)

	audit, err := e.DB.SessionAudit(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, audit, 2)
	require.Equal(t, []string{"olga", "ada"}, []string{audit[0].Actor, audit[1].Actor})
	require.Equal(t, []seckill.Role{seckill.RoleOperator, seckill.RoleAdmin}, []seckill.Role{audit[0].ActorRole, audit[1].ActorRole})

	rows, err := rawDB(t, e).QueryContext(ctx, "SELECT actor_role FROM session_audit WHERE session_id = ? ORDER BY id", sess.ID)
	require.NoError(t, err)
	defer rows.Close()
	var roles []string
	for rows.Next() {
		var r string
		require.NoError(t, rows.Scan(&r))
		roles = append(roles, r)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"operator", "admin"}, roles, "the column, not only the detail's JSON")
}
