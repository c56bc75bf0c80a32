package api

import (
	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/expiring"
)

// BoundUnknownForTest shrinks the negative caches of unknown session ids and
// order numbers to n entries each, so a test can show the bound holds
// without sending a production-sized flood. Call it before serving.
func BoundUnknownForTest(s *Server, n int) {
	s.sessions.Unknown = expiring.New[int64, struct{}](n)
	s.orders.Unknown = expiring.New[string, struct{}](n)
}

// UnknownCachedForTest returns how many unknown session ids and order
// numbers the server holds in memory.
func UnknownCachedForTest(s *Server) (sessions, orders int) {
	return s.sessions.Unknown.Len(), s.orders.Unknown.Len()
}

// ReadBucketsForTest returns how many per-IP read buckets the server holds.
func ReadBucketsForTest(s *Server) int {
	if s.reads == nil {
		return 0
	}
	return s.reads.Len()
}

// AccessRule is a route's rule as the tests see it.
type AccessRule struct {
	Who  string
	Role seckill.Role
}

// AccessRulesForTest returns routeAccess: "METHOD /path" → its rule.
func AccessRulesForTest() map[string]AccessRule {
	out := map[string]AccessRule{}
	for k, a := range routeAccess {
		out[k] = AccessRule{Who: a.who, Role: a.role}
	}
	return out
}
