package api

import (
	"github.com/seckill/seckill"
)

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

// SetExportPageForTest makes the order export read n orders at a time.
func SetExportPageForTest(s *Server, n int) { s.exportPage = n }
