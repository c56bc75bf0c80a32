-- +goose Up
-- The order events out (docs/events.md). A row is written in the same
-- transaction as the ledger row of the change it tells of, with seq NULL.
-- Auto-increment ids become visible out of order (a smaller id can commit
-- after a larger one), so the feed never pages by id: the worker's relay
-- gives the visible unsequenced rows increasing seq values, in id order,
-- one pass at a time (serialized by the lock on order_event_cursor's one
-- row), and the feed and the delivery read sequenced rows by seq only.
-- The delivery columns follow the refund retries' (00006): attempts,
-- next try (backoff, or a relay's lease), last error, parked.
CREATE TABLE order_events (
    id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    seq          BIGINT       NULL,
    type         VARCHAR(32)  NOT NULL,
    order_no     VARCHAR(64)  NOT NULL,
    order_json   TEXT         NOT NULL,
    created_at   DATETIME(3)  NOT NULL,
    delivered_at DATETIME(3)  NULL,
    attempts     INT          NOT NULL DEFAULT 0,
    next_at      DATETIME(3)  NULL,
    last_error   VARCHAR(512) NOT NULL DEFAULT '',
    parked_at    DATETIME(3)  NULL,
    UNIQUE KEY order_events_seq (seq),
    KEY order_events_undelivered (delivered_at, seq),
    KEY order_events_order (order_no, delivered_at, seq)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- The sequencer's cursor: the last seq handed out.
CREATE TABLE order_event_cursor (
    id  TINYINT NOT NULL PRIMARY KEY,
    seq BIGINT  NOT NULL
) ENGINE = InnoDB;
INSERT INTO order_event_cursor (id, seq) VALUES (1, 0);

-- +goose Down
DROP TABLE order_event_cursor;
DROP TABLE order_events;
