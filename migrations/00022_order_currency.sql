-- +goose Up
-- An order carries its currency (the session's, ISO 4217 lower case), as
-- its amount's unit: shoppers, customer service and finance read it with
-- the amount. Orders made before are left '' (omitted in their JSON).
ALTER TABLE orders ADD COLUMN currency CHAR(3) NOT NULL DEFAULT '' AFTER amount_cents;

-- +goose Down
ALTER TABLE orders DROP COLUMN currency;
