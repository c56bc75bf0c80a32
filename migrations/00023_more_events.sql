-- +goose Up
-- Every event carries the shape it was recorded with (api_version,
-- docs/events.md); the events recorded before it have the first one's.
-- A draw's registration events (registration.won, registration.lost)
-- share the table and its delivery: for them order_no holds the key they
-- are ordered by (registration:<session>:<user>) and order_json the
-- registration's JSON.
ALTER TABLE order_events ADD COLUMN api_version CHAR(10) NOT NULL DEFAULT '2026-12-05';

-- How far a draw sale's registration.lost events are recorded: every
-- registrant up to this user id is done (SECKILL_EVENTS_LOST=1).
ALTER TABLE sessions ADD COLUMN lost_events_after BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE sessions DROP COLUMN lost_events_after;
ALTER TABLE order_events DROP COLUMN api_version;
