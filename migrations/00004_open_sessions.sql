-- +goose Up
-- The shop's session list asks for the sessions not yet ended, soonest
-- first (about once a second per API process): without this key it scans
-- every sale ever held.
ALTER TABLE sessions ADD KEY sessions_end_at (end_at);

-- +goose Down
ALTER TABLE sessions DROP KEY sessions_end_at;
