package api

import (
	"time"

	"github.com/gofiber/fiber/v2"
)

// observe records every answer in the metrics (metrics.Series): by route
// pattern, and for admissions by the layer that decided and the outcome.
func (s *Server) observe(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	if err != nil {
		// Let the error handler write the answer first, so the status and
		// the layer header are final.
		if herr := s.errorHandler(c, err); herr != nil {
			return herr
		}
	}
	route := c.Route().Path
	if route == "/" && c.Path() != "/" {
		route = "unmatched"
	}
	status := c.Response().StatusCode()
	s.series.Answer(route, c.Method(), status, time.Since(start), traceID(c))
	if layer := c.Response().Header.Peek(HeaderLayer); len(layer) > 0 {
		s.series.Admission(layer, status, c.Response().Body())
	}
	return nil
}
