-- +goose Up
-- The events relay picks the due events by next_at (docs/events.md): a
-- sequenced event waiting for delivery always carries when it is due (its
-- recording, set by the sequencer; its backoff; a relay's lease), a
-- delivered or parked one none, so a pass reads only the due events
-- through order_events_due, however many others wait on a backoff, are
-- parked, or were delivered. The events waiting now become due at once,
-- as their NULL meant.
UPDATE order_events SET next_at = created_at
    WHERE delivered_at IS NULL AND parked_at IS NULL AND next_at IS NULL;

-- Without SECKILL_EVENTS_URL nobody receives the events: the relay lets
-- those that waited longer than SECKILL_EVENTS_UNSENT_RETENTION go, so
-- the push's backlog stays bounded. A let-go event is done with the push
-- (delivered_at set, as for a delivery) and marked unsent; it stays in the
-- feed like every event.
ALTER TABLE order_events
    ADD COLUMN unsent BOOLEAN NOT NULL DEFAULT FALSE,
    ADD KEY order_events_due (next_at);

-- +goose Down
ALTER TABLE order_events DROP KEY order_events_due, DROP COLUMN unsent;
