package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// lastWord is where `operators add` prints the token, for a script to take.
func lastWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// The table names each operator, its role, when it was created, last used
// and revoked.
func TestPrintOperatorsTable(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	used, revoked := now.Add(-90*time.Second), now.Add(-time.Hour)
	ops := []seckill.OperatorToken{
		{Name: "ada", Role: seckill.RoleAdmin, CreatedAt: now.Add(-48 * time.Hour), LastUsed: &used},
		{Name: "li", Role: seckill.RoleViewer, CreatedAt: now.Add(-24 * time.Hour), RevokedAt: &revoked},
	}
	var buf bytes.Buffer
	require.NoError(t, printOperators(&buf, ops, false, now))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3)
	require.Equal(t, []string{"NAME", "ROLE", "CREATED", "LAST_USED", "REVOKED"}, strings.Fields(lines[0]))
	require.Regexp(t, `^ada +admin +2025-12-31T03:04:05Z +1m30s ago \(2026-01-02T03:02:35Z\) +-$`, lines[1])
	require.Regexp(t, `^li +viewer +2026-01-01T03:04:05Z +never +2026-01-02T02:04:05Z$`, lines[2])

	buf.Reset()
	require.NoError(t, printOperators(&buf, nil, false, now))
	require.Contains(t, buf.String(), "no operators: add one with seckill operators add")
}

// `seckill operators add` prints a token, once, as its last word; only its
// hash is stored, and it proves the operator. `list` shows the operator,
// `revoke` ends the token; a second add of an active name and an unknown
// role are errors that say what to do.
func TestOperatorsCommand(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	t.Setenv("SECKILL_MYSQL_DSN", e.DSN)
	ctx := context.Background()

	out, err := execute(ctx, "operators", "add", "ada", "--role", "admin")
	require.NoError(t, err)
	require.Contains(t, out, "operator ada (admin) created")
	token := lastWord(out)
	require.True(t, seckill.IsOperatorToken(token), "last word %q", token)
	op, err := e.DB.Operator(ctx, seckill.HashOperatorToken(token))
	require.NoError(t, err)
	require.Equal(t, &seckill.Operator{Name: "ada", Role: seckill.RoleAdmin, Via: seckill.CredentialToken}, op)

	out, err = execute(ctx, "operators", "list")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^ada +admin +\S+ +\S+ ago .* +-$`, out, "used once: by the lookup above")
	require.NotContains(t, out, token)
	out, err = execute(ctx, "operators", "list", "--json")
	require.NoError(t, err)
	var listed struct{ Operators []seckill.OperatorToken }
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	require.Len(t, listed.Operators, 1)
	require.Equal(t, "ada", listed.Operators[0].Name)
	require.Equal(t, seckill.RoleAdmin, listed.Operators[0].Role)
	require.Nil(t, listed.Operators[0].RevokedAt)

	_, err = execute(ctx, "operators", "add", "ada", "--role", "viewer")
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "%v", err)
	require.ErrorContains(t, err, "revoke it first")
	_, err = execute(ctx, "operators", "add", "bob", "--role", "root")
	require.Equal(t, seckill.EINVALID, seckill.ErrorCode(err), "%v", err)
	require.ErrorContains(t, err, "viewer, operator, admin")
	_, err = execute(ctx, "operators", "add", "bob")
	require.ErrorContains(t, err, `"role" not set`)

	out, err = execute(ctx, "operators", "revoke", "ada")
	require.NoError(t, err)
	require.Contains(t, out, "operator ada revoked")
	_, err = e.DB.Operator(ctx, seckill.HashOperatorToken(token))
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err), "%v", err)
	_, err = execute(ctx, "operators", "revoke", "ada")
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err), "%v", err)
	out, err = execute(ctx, "operators", "list")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^ada +admin +.*\d\dZ$`, out, "listed with its revocation")

	out, err = execute(ctx, "operators", "add", "ada", "--role", "viewer")
	require.NoError(t, err, "a revoked name is given again")
	op, err = e.DB.Operator(ctx, seckill.HashOperatorToken(lastWord(out)))
	require.NoError(t, err)
	require.Equal(t, seckill.RoleViewer, op.Role)
}

// `seckill dev` makes an operator of each role, and a restart replaces
// them: the earlier run's tokens stop working.
func TestDevOperatorsReplaceTheirTokens(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	first, err := devOperators(ctx, e.DB)
	require.NoError(t, err)
	again, err := devOperators(ctx, e.DB)
	require.NoError(t, err)
	require.Len(t, again, len(seckill.Roles))
	for i, r := range seckill.Roles {
		_, err := e.DB.Operator(ctx, seckill.HashOperatorToken(first[i]))
		require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err), "%s: the first run's token", r)
		op, err := e.DB.Operator(ctx, seckill.HashOperatorToken(again[i]))
		require.NoError(t, err)
		require.Equal(t, &seckill.Operator{Name: "dev-" + string(r), Role: r, Via: seckill.CredentialToken}, op)
	}
}
