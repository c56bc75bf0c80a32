package api

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/admission"
)

// deviceCookieAge is how long a browser keeps its device id.
const deviceCookieAge = 365 * 24 * time.Hour

// device: GET /api/v1/device. Sets the device cookie (admission.Service.Device:
// a valid one's id signed again with the current key, so a rotation's new
// secret reaches the cookies of the pages that load) and says its id: the
// shop page calls it once when it loads.
func (s *Server) device(c *fiber.Ctx) error {
	id, signed, err := s.svc.Admission.Device(c.Cookies(admission.DeviceCookie))
	if err != nil {
		return err
	}
	c.Cookie(&fiber.Cookie{Name: admission.DeviceCookie, Value: signed, Path: "/", HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode, Secure: c.Protocol() == "https",
		MaxAge: int(deviceCookieAge.Seconds())})
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"device_id": id, "max_age_seconds": int(deviceCookieAge.Seconds())})
}
