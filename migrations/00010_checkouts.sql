-- +goose Up
-- The provider's payment of each order that opened a checkout. The row is
-- written before the provider is asked (payment_id still NULL) and
-- completed after, so the close of an unpaid order knows to ask the
-- provider whether it was paid, and to cancel it, before it closes.
CREATE TABLE checkouts (
    order_no     VARCHAR(64)   NOT NULL,
    provider     VARCHAR(32)   NOT NULL,
    payment_id   VARCHAR(128)  NULL,
    checkout_url VARCHAR(1024) NULL,
    expires_at   DATETIME(3)   NOT NULL,
    created_at   DATETIME(3)   NOT NULL,
    updated_at   DATETIME(3)   NOT NULL,
    PRIMARY KEY (order_no)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- +goose Down
DROP TABLE checkouts;
