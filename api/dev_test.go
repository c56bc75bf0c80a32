package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testenv"
)

// Without Config.Dev (as in `seckill api`) the dev sign-in does not exist,
// and the shop page does not offer it.
func TestDevEndpointsAreOffByDefault(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	testenv.RequireError(t, e.Do("POST", "/dev/v1/token", "", map[string]any{"user_id": 1}), 404, "NOT_FOUND", "no route")
	page := e.Do("GET", "/", "", nil)
	require.Equal(t, http.StatusOK, page.Status)
	require.Contains(t, string(page.Raw), `data-dev="false"`)
	require.NotContains(t, string(page.Raw), "dev-signin")
}

// In dev, /dev/v1/token signs in as any user.
func TestDevSignIn(t *testing.T) {
	e := testenv.New(t, testenv.Options{Dev: true, NoWorker: true})
	page := e.Do("GET", "/", "", nil)
	require.Contains(t, string(page.Raw), `data-dev="true"`)

	testenv.RequireError(t, e.Do("POST", "/dev/v1/token", "", map[string]any{"user_id": 0}), 400, "INVALID_ARGUMENT", "user_id")
	testenv.RequireError(t, e.Do("POST", "/dev/v1/token", "", map[string]any{"user": 3}), 400, "INVALID_ARGUMENT", "unknown field")
	r := e.Do("POST", "/dev/v1/token", "", map[string]any{"user_id": 9})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, float64(9), r.Body["user_id"])
	me := e.Do("GET", "/api/v1/orders", r.Str("token"), nil)
	require.Equal(t, http.StatusOK, me.Status, "%s", me.Raw)
}
