package api

import (
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Cross-origin calls of the shopper routes (Config.CORSOrigins). Not
// Fiber's middleware/cors: it answers an unlisted origin's preflight with
// the allowed methods and headers, and an empty list means any origin;
// here an origin not listed gets no CORS header at all, and the admin
// routes are never mounted behind it.
const (
	corsMethods = "GET, POST"
	corsHeaders = "Authorization, Idempotency-Key, Content-Type"
	corsMaxAge  = "600"
)

// cors answers the listed origins: a preflight (OPTIONS with
// Access-Control-Request-Method) with 204 and what may be sent, any other
// request with the origin allowed and credentials (the device cookie).
// Every answer varies by Origin, so a cache never serves one origin's
// headers to another.
func (s *Server) cors(c *fiber.Ctx) error {
	c.Vary(fiber.HeaderOrigin)
	origin := c.Get(fiber.HeaderOrigin)
	if origin == "" || !slices.Contains(s.cfg.CORSOrigins, strings.ToLower(origin)) {
		return c.Next()
	}
	c.Set(fiber.HeaderAccessControlAllowOrigin, origin)
	c.Set(fiber.HeaderAccessControlAllowCredentials, "true")
	if c.Method() != fiber.MethodOptions || c.Get(fiber.HeaderAccessControlRequestMethod) == "" {
		return c.Next()
	}
	c.Vary(fiber.HeaderAccessControlRequestMethod, fiber.HeaderAccessControlRequestHeaders)
	c.Set(fiber.HeaderAccessControlAllowMethods, corsMethods)
	c.Set(fiber.HeaderAccessControlAllowHeaders, corsHeaders)
	c.Set(fiber.HeaderAccessControlMaxAge, corsMaxAge)
	return c.SendStatus(fiber.StatusNoContent)
}
