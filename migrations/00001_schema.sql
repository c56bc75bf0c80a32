-- +goose Up
-- Sessions carry both the sale definition and the database stock: MySQL is
-- the truth, Redis only a fast gate in front of it. The CHECK makes a
-- negative stock impossible even for a buggy caller.
CREATE TABLE sessions (
    id             BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    sku_id         BIGINT       NOT NULL,
    title          VARCHAR(200) NOT NULL,
    price_cents    BIGINT       NOT NULL,
    total_stock    INT          NOT NULL,
    stock          INT          NOT NULL,
    per_user_limit INT          NOT NULL,
    start_at       DATETIME(3)  NOT NULL,
    end_at         DATETIME(3)  NOT NULL,
    created_at     DATETIME(3)  NOT NULL,
    updated_at     DATETIME(3)  NOT NULL,
    CONSTRAINT sessions_stock_nonneg CHECK (stock >= 0),
    CONSTRAINT sessions_stock_le_total CHECK (stock <= total_stock),
    KEY sessions_window (start_at, end_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE orders (
    id           BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
    order_no     VARCHAR(64) NOT NULL,
    session_id   BIGINT      NOT NULL,
    sku_id       BIGINT      NOT NULL,
    user_id      BIGINT      NOT NULL,
    quantity     INT         NOT NULL,
    amount_cents BIGINT      NOT NULL,
    status       VARCHAR(16) NOT NULL,
    reason       VARCHAR(64) NOT NULL DEFAULT '',
    trace_id     VARCHAR(64) NOT NULL DEFAULT '',
    pay_deadline DATETIME(3) NULL,
    created_at   DATETIME(3) NOT NULL,
    updated_at   DATETIME(3) NOT NULL,
    UNIQUE KEY orders_order_no (order_no),
    KEY orders_session_status (session_id, status),
    KEY orders_user (user_id, session_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- The per-user limit, enforced again by the database: every unit a live
-- order holds takes one (session, user, slot) row, slot in 1..per_user_limit
-- as handed out by the admission script. A Redis failure can hand a slot out
-- twice; the primary key then refuses the second order. Rows are deleted
-- when their order closes, in the same transaction that gives stock back.
CREATE TABLE order_slots (
    session_id BIGINT      NOT NULL,
    user_id    BIGINT      NOT NULL,
    slot       INT         NOT NULL,
    order_no   VARCHAR(64) NOT NULL,
    PRIMARY KEY (session_id, user_id, slot),
    KEY order_slots_order (order_no)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE payments (
    id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    payment_id   VARCHAR(128) NOT NULL,
    event_id     VARCHAR(128) NOT NULL,
    order_no     VARCHAR(64)  NOT NULL,
    amount_cents BIGINT       NOT NULL,
    status       VARCHAR(16)  NOT NULL,
    trace_id     VARCHAR(64)  NOT NULL DEFAULT '',
    created_at   DATETIME(3)  NOT NULL,
    updated_at   DATETIME(3)  NOT NULL,
    UNIQUE KEY payments_payment_id (payment_id),
    UNIQUE KEY payments_event_id (event_id),
    KEY payments_order (order_no)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- The ledger (流水): one row per status change, written in the same
-- transaction as the change, carrying the purchase's trace id.
CREATE TABLE order_ledger (
    id          BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
    order_no    VARCHAR(64) NOT NULL,
    session_id  BIGINT      NOT NULL,
    from_status VARCHAR(16) NOT NULL,
    to_status   VARCHAR(16) NOT NULL,
    quantity    INT         NOT NULL,
    stock_delta INT         NOT NULL,
    reason      VARCHAR(64) NOT NULL DEFAULT '',
    trace_id    VARCHAR(64) NOT NULL DEFAULT '',
    created_at  DATETIME(3) NOT NULL,
    KEY order_ledger_order (order_no),
    KEY order_ledger_session (session_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- +goose Down
DROP TABLE order_ledger;
DROP TABLE payments;
DROP TABLE order_slots;
DROP TABLE orders;
DROP TABLE sessions;
