-- +goose Up
-- preheated_at: when a preheat first read the session to load it into
-- Redis; from then on its mode no longer changes (the preheat loaded what
-- that mode needs, and the session's workflow decides at the start by it).
-- paused_at: when the current pause began (NULL when not paused); a draw's
-- open rights are extended by the pause at the resume.
-- rights_version: bumped whenever a drawn sale's rights change (a pass
-- that grants, a resume's extension), so that the APIs' copies of the
-- positions reread them only then.
ALTER TABLE sessions
    ADD COLUMN preheated_at   DATETIME(3) NULL,
    ADD COLUMN paused_at      DATETIME(3) NULL,
    ADD COLUMN rights_version INT         NOT NULL DEFAULT 0;
-- A sale paused now was paused at its last change at the latest.
UPDATE sessions SET paused_at = updated_at WHERE paused;

-- +goose Down
ALTER TABLE sessions DROP COLUMN rights_version, DROP COLUMN paused_at, DROP COLUMN preheated_at;
