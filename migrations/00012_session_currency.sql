-- +goose Up
-- A session's price is in its own currency (ISO 4217, lower case: what the
-- payment providers take); empty is the deployment's SECKILL_CURRENCY, which
-- every session created before this change was priced in.
ALTER TABLE sessions ADD COLUMN currency CHAR(3) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE sessions DROP COLUMN currency;
