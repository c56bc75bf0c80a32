-- +goose Up
-- An order event keeps its order's trace id (the purchase's), so the span
-- of its webhook's delivery links to the purchase's trace: ops go from
-- the order's trace to what fulfilment was told. '' for the events of a
-- registration, and those recorded before.
ALTER TABLE order_events ADD COLUMN trace_id VARCHAR(64) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE order_events DROP COLUMN trace_id;
