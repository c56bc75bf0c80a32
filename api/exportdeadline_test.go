package api

import (
	"context"
	"encoding/csv"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/auth"
)

// slowPages is an order store whose every page takes delay, as MySQL's
// under a sale's load may: pages pages of limit orders each.
type slowPages struct {
	pages int
	delay time.Duration
}

func (s slowPages) FindOrders(_ context.Context, _ seckill.OrderFilter, before int64, limit int) ([]*seckill.Order, int64, error) {
	time.Sleep(s.delay)
	out := make([]*seckill.Order, limit)
	for i := range out {
		out[i] = &seckill.Order{OrderNo: fmt.Sprintf("1-%d-%d", before, i), SessionID: 1, Quantity: 1, Status: seckill.StatusPaid}
	}
	if next := before + 1; next < int64(s.pages) {
		return out, next, nil
	}
	return out, 0, nil
}

func (slowPages) OrderRecord(context.Context, string) (*seckill.OrderRecord, error) {
	return nil, seckill.Errorf(seckill.ENOTFOUND, "no order")
}

// An export longer than the server's write timeout is whole: the timeout
// holds for each page, not for the whole answer (a million orders take
// longer than one answer may take to write).
func TestExportOutlivesTheWriteTimeout(t *testing.T) {
	s, err := New(Config{JWTSecret: []byte("jwt"), WebhookSecret: []byte("hook"), Operators: &auth.Operators{Bootstrap: "admin-token"}, Shoppers: &auth.Shoppers{Secrets: [][]byte{[]byte("jwt")}}, DependencyPing: -1},
		Services{Admission: admission.New(admission.Config{}), Backoffice: slowPages{pages: 8, delay: 60 * time.Millisecond}})
	require.NoError(t, err)
	s.writeTimeout, s.exportPage = 150*time.Millisecond, 2
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	app := s.App()
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(time.Second) })

	req, err := http.NewRequest("GET", "http://"+ln.Addr().String()+"/admin/v1/orders/export?session_id=1", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer admin-token")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	rows, err := csv.NewReader(resp.Body).ReadAll()
	require.NoError(t, err, "the export was cut after %s", time.Since(start))
	require.Len(t, rows, 1+8*2, "the header and every order")
	require.Greater(t, time.Since(start), s.writeTimeout, "the export outlived one write timeout")
}
