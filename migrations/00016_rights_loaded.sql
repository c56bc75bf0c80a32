-- +goose Up
-- Whether a granted right has reached the rights hash admission checks
-- in Redis. A pass of rights grants in MySQL first, then writes Redis,
-- then sets this: a pass that dies between the two leaves rights granted
-- and not loaded, which the next pass (or the retry) finds here and
-- loads, instead of a winner who cannot buy until the right lapses.
-- Rights granted before this column existed read as not loaded and are
-- loaded once more, harmlessly (Redis keeps a field it holds).
ALTER TABLE draw_entries
    ADD COLUMN right_loaded BOOLEAN NOT NULL DEFAULT FALSE,
    ADD KEY draw_entries_unloaded (session_id, right_loaded);

-- +goose Down
ALTER TABLE draw_entries DROP KEY draw_entries_unloaded, DROP COLUMN right_loaded;
