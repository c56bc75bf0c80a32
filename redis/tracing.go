package redis

import (
	"github.com/redis/go-redis/extra/redisotel/v9"
	goredis "github.com/redis/go-redis/v9"
)

// Trace makes every command and pipeline a span of the context's trace
// (go-redis's redisotel: db.system, db.operation.name, the command
// without its values, server.address), on every node of a cluster.
func Trace(rdb goredis.UniversalClient) error {
	return redisotel.InstrumentTracing(rdb, redisotel.WithDBStatement(false))
}
