package api

import (
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"
)

// The front door is busy with many order requests in flight (a burst
// waiting for the admission script) or at a high rate (a sold-out burst
// answered from memory), and quiet otherwise.
func TestFrontDoorBusy(t *testing.T) {
	var d frontDoor
	release := make(chan struct{})
	var entered sync.WaitGroup
	app := fiber.New()
	app.Post("/orders", d.count, func(c *fiber.Ctx) error {
		entered.Done()
		<-release
		return c.SendStatus(fiber.StatusAccepted)
	})
	require.False(t, d.busy())

	var done sync.WaitGroup
	send := func(n int) {
		entered.Add(n)
		for range n {
			done.Add(1)
			go func() {
				defer done.Done()
				resp, err := app.Test(httptest.NewRequest("POST", "/orders", nil), -1)
				if err == nil {
					resp.Body.Close()
				}
			}()
		}
		entered.Wait()
	}
	send(busyInFlight - 1)
	require.False(t, d.busy(), "a handful in flight is a quiet sale")
	send(1)
	require.True(t, d.busy(), "%d in flight is a burst", busyInFlight)
	close(release)
	done.Wait()
	require.False(t, d.busy(), "answered: quiet again")

	// A rate: the requests of one sample, scaled to a second.
	d.sample()
	perSample := int64(busyRate * doorSample / time.Second)
	d.seen.Add(perSample - 1)
	d.sample()
	require.False(t, d.busy(), "just under %d requests/s", busyRate)
	d.seen.Add(perSample)
	d.sample()
	require.True(t, d.busy(), "%d requests/s is a burst", busyRate)
	d.sample()
	require.False(t, d.busy(), "no request in the last sample: quiet")
}
