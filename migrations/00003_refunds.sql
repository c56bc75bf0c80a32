-- +goose Up
-- Refunds of late and duplicate payments: the refund relay finds payments
-- waiting for their refund by status, and the provider's refund id is kept.
ALTER TABLE payments
    ADD COLUMN refund_id   VARCHAR(128) NULL,
    ADD KEY payments_status (status);

-- +goose Down
ALTER TABLE payments DROP KEY payments_status, DROP COLUMN refund_id;
