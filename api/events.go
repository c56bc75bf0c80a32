package api

import (
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// EventFeed pages through the order events, oldest first.
type EventFeed interface {
	Events(ctx context.Context, after int64, limit int) ([]seckill.Event, int64, error)
}

// Page sizes of GET /admin/v1/events.
const (
	defaultEventsPage = 100
	maxEventsPage     = 1000
)

// listEvents: GET /admin/v1/events[?cursor=C&limit=N], the order events in
// feed order (docs/events.md). next_cursor, passed back, gives the events
// after this page; like every list's, it is absent at the end (a page
// without events): the consumer polls again with the cursor it has. The
// cursor is the feed position (decimal); an empty one is the feed's start.
func (s *Server) listEvents(c *fiber.Ctx) error {
	limit, err := queryLimit(c, defaultEventsPage, maxEventsPage)
	if err != nil {
		return err
	}
	var after int64
	if raw := c.Query("cursor"); raw != "" {
		if after, err = strconv.ParseInt(raw, 10, 64); err != nil || after < 0 {
			return seckill.Errorf(seckill.EINVALID, "cursor is not one this API returned (pass next_cursor as it came)")
		}
	}
	events, next, err := s.svc.Events.Events(c.UserContext(), after, limit)
	if err != nil {
		return err
	}
	out := fiber.Map{"events": events}
	if len(events) == 0 {
		out["events"] = []seckill.Event{}
	} else {
		out["next_cursor"] = strconv.FormatInt(next, 10)
	}
	return c.JSON(out)
}
