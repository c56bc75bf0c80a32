-- +goose Up
-- A session may require a human check (a captcha) before its purchase
-- ticket is issued; it then requires the ticket too.
ALTER TABLE sessions ADD COLUMN require_captcha BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE sessions DROP COLUMN require_captcha;
