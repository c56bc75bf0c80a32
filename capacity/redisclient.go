package capacity

import (
	"context"
	"net"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// RedisClient counts what a go-redis client sends (a Hook): round trips
// ("round_trips": a command, or a pipeline or transaction as one; a new
// connection's handshake apart, "conn_setups") and commands by name
// ("sent:evalsha"). Next to the server's counts (Redis),
// which also count the commands the scripts call inside Redis, it tells
// network round trips from work inside a script.
type RedisClient struct {
	mu sync.Mutex
	c  Counts
}

// NewRedisClient returns a counter; add it to the clients to count with
// AddHook.
func NewRedisClient() *RedisClient { return &RedisClient{c: Counts{}} }

// backgroundKey marks the context of the API's background loops.
type backgroundKey struct{}

// background marks ctx as the API's background loops' (the outbox
// relay's passes, the sold-out watcher): what they send is left out of
// the counts, so that a phase counts its own round trips exactly. Taken
// off at their idle rate instead, one relay pass (three round trips) more
// or less in a phase than the rate predicts moved a phase of ten or
// twenty units by a tenth of a round trip per unit or more.
func background(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

func counted(ctx context.Context) bool { return ctx.Value(backgroundKey{}) == nil }

func (r *RedisClient) Name() string { return "redis_client" }

func (r *RedisClient) Read(context.Context) (Counts, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := Counts{}
	for k, v := range r.c {
		out[k] = v
	}
	return out, nil
}

func (r *RedisClient) count(cmds []goredis.Cmder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	setup := true
	for _, c := range cmds {
		name := strings.ToLower(c.Name())
		r.c["sent:"+name]++
		setup = setup && connSetup[name]
	}
	// A new pooled connection's handshake is not the work's round trip.
	if setup {
		r.c["conn_setups"]++
	} else {
		r.c["round_trips"]++
	}
}

// connSetup are the commands go-redis sends on a new connection.
var connSetup = map[string]bool{"hello": true, "client": true, "auth": true, "select": true}

func (r *RedisClient) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (r *RedisClient) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if counted(ctx) {
			r.count([]goredis.Cmder{cmd})
		}
		return next(ctx, cmd)
	}
}

func (r *RedisClient) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if counted(ctx) {
			r.count(cmds)
		}
		return next(ctx, cmds)
	}
}
