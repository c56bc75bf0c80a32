package api

import (
	"net/netip"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/seckill/seckill/clientip"
)

// clientIP is the one place the API learns who is calling: the per-IP
// limits and the logs use it. Fiber's own ProxyHeader is not used, since it
// believes the header from any peer.
func (s *Server) clientIP(c *fiber.Ctx) netip.Addr {
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	peer = peer.Unmap()
	if s.cfg.ProxyHeader == "" || !clientip.Trusted(peer, s.cfg.TrustedProxies) {
		return peer
	}
	// Views into the request (no copies): Resolve keeps none of them, and
	// every order request asks (admission's limits and risk check).
	var buf [4]string
	values := buf[:0]
	for _, v := range c.Request().Header.PeekAll(s.cfg.ProxyHeader) {
		values = append(values, utils.UnsafeString(v))
	}
	return clientip.Resolve(peer, s.cfg.TrustedProxies, values...)
}
