-- +goose Up
-- Refunds that fail at the provider are retried with backoff and, after
-- too many failed runs, parked (visible, no longer tried on their own).
-- The refund relay picks due, unparked refunds oldest-due first, so a
-- refund the provider keeps refusing never starves newer ones.
-- Payments the webhook writes before signalling (status RECEIVED) need no
-- column: the existing status key finds them.
ALTER TABLE payments
    ADD COLUMN refund_attempts  INT          NOT NULL DEFAULT 0,
    ADD COLUMN refund_next_at   DATETIME(3)  NULL,
    ADD COLUMN refund_error     VARCHAR(512) NOT NULL DEFAULT '',
    ADD COLUMN refund_parked_at DATETIME(3)  NULL,
    ADD KEY payments_refund_due (status, refund_parked_at, refund_next_at);

-- Refunds already waiting are due now.
UPDATE payments SET refund_next_at = created_at WHERE status = 'REFUND_PENDING';

-- +goose Down
ALTER TABLE payments
    DROP KEY payments_refund_due,
    DROP COLUMN refund_parked_at,
    DROP COLUMN refund_error,
    DROP COLUMN refund_next_at,
    DROP COLUMN refund_attempts;
