-- +goose Up
-- A sale's items (sizes, colours): each with its own stock and price. Every
-- sale has its items here, a single-SKU sale one (its own sku, title,
-- price and stock); the session's stock and total_stock stay their sums,
-- changed in the same transactions. position is the order the merchant
-- listed them in.
CREATE TABLE session_items (
    session_id  BIGINT       NOT NULL,
    sku_id      BIGINT       NOT NULL,
    position    INT          NOT NULL,
    title       VARCHAR(200) NOT NULL,
    price_cents BIGINT       NOT NULL,
    total_stock INT          NOT NULL,
    stock       INT          NOT NULL,
    PRIMARY KEY (session_id, sku_id),
    CONSTRAINT session_items_stock_nonneg CHECK (stock >= 0),
    CONSTRAINT session_items_stock_le_total CHECK (stock <= total_stock)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- The sales made before are single-SKU sales.
INSERT INTO session_items (session_id, sku_id, position, title, price_cents, total_stock, stock)
SELECT id, sku_id, 0, title, price_cents, total_stock, stock FROM sessions;

-- +goose Down
DROP TABLE session_items;
