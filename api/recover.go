package api

import (
	"fmt"
	"runtime/debug"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"github.com/seckill/seckill"
)

const localPanicked = "seckill.panicked"

// errPanic is the answer to a request whose handler panicked: 500 INTERNAL
// in the error shape, whatever the panic value was (a panicking *Error must
// not pass for a business answer).
var errPanic = seckill.Errorf(seckill.EINTERNAL, "internal error")

// recoverPanics turns a panic in any later handler into errPanic, so one bad
// request costs one 500 and the process keeps serving (Fiber's recover
// middleware). The stack goes to the log on one line with the trace id,
// which the shopper's error body carries too.
func (s *Server) recoverPanics() fiber.Handler {
	rec := recover.New(recover.Config{
		EnableStackTrace: true,
		StackTraceHandler: func(c *fiber.Ctx, e any) {
			c.Locals(localPanicked, true)
			s.log.Error("panic in handler", "trace_id", traceID(c), "method", c.Method(), "path", c.Path(),
				"client_ip", s.clientIP(c).String(), "panic", fmt.Sprint(e), "stack", string(debug.Stack()))
		},
	})
	return func(c *fiber.Ctx) error {
		err := rec(c)
		if panicked, _ := c.Locals(localPanicked).(bool); panicked {
			return errPanic
		}
		return err
	}
}
