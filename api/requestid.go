package api

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

const headerRequestID = "X-Request-ID"

// requestID gives every request a trace id: the client's X-Request-ID when
// it is a sane token (it ends up in logs, ledger rows and search
// attributes), a fresh one otherwise. It is echoed on every response.
//
// The client's id is copied: c.Get returns a view into fasthttp's request
// buffer, which the connection's next request overwrites once the handler
// returned, while the id lives on in a background workflow start, its
// ledger rows, its search attribute and log lines. Every request string
// that outlives the request (header values, path parameters, the
// Idempotency-Key) is copied the same way before it leaves the handler.
func requestID(c *fiber.Ctx) error {
	id := c.Get(headerRequestID)
	if validTraceID(id) {
		id = strings.Clone(id)
	} else {
		id = newTraceID()
	}
	c.Locals(headerRequestID, id)
	c.SetUserContext(seckill.WithTraceID(c.UserContext(), id))
	c.Set(headerRequestID, id)
	return c.Next()
}

func validTraceID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		ok := b == '-' || b == '_' || b == '.' || b == ':' ||
			(b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')
		if !ok {
			return false
		}
	}
	return true
}

func traceID(c *fiber.Ctx) string {
	id, _ := c.Locals(headerRequestID).(string)
	return id
}

// Trace ids are a random per-process prefix and a counter: unique across
// processes with overwhelming probability, and far cheaper than a random
// UUID per request on the hot path.
var (
	tracePrefix  = randomPrefix()
	traceCounter atomic.Uint64
)

func randomPrefix() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b) + "-"
}

func newTraceID() string {
	return tracePrefix + strconv.FormatUint(traceCounter.Add(1), 36)
}
