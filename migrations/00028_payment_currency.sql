-- +goose Up
-- A payment carries its currency as the provider named it (ISO 4217,
-- lower case): digits in another currency than the order's do not pay
-- it, and a payment settled from this row later (the refund relay, the
-- close) is judged as the webhook's was. '' where the provider did not
-- say, and for every payment recorded before.
ALTER TABLE payments ADD COLUMN currency CHAR(3) NOT NULL DEFAULT '' AFTER amount_cents;

-- +goose Down
ALTER TABLE payments DROP COLUMN currency;
