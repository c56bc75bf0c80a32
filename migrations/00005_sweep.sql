-- +goose Up
-- The worker's sweep asks every few seconds for the WAIT_PAY orders past
-- their pay deadline (of any session): without this key it scans every
-- order ever taken.
ALTER TABLE orders ADD KEY orders_status_deadline (status, pay_deadline);

-- +goose Down
ALTER TABLE orders DROP KEY orders_status_deadline;
