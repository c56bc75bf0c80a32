package api

import (
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
)

const headerRequestID = "X-Request-ID"

// requestID gives every request a trace id: the client's X-Request-ID when
// it is a sane token (it ends up in logs, ledger rows and search
// attributes), a fresh one otherwise. It is echoed on every response.
func requestID(c *fiber.Ctx) error {
	id := c.Get(headerRequestID)
	if !validTraceID(id) {
		id = uuid.NewString()
	}
	c.Locals(headerRequestID, id)
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
