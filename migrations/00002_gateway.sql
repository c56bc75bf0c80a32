-- +goose Up
-- Sessions may require a purchase ticket (anti-script): a short-lived,
-- single-use HMAC ticket fetched inside the sale window.
ALTER TABLE sessions ADD COLUMN require_ticket BOOLEAN NOT NULL DEFAULT FALSE;

-- Blocked shoppers: refused with 403 before any stock logic. MySQL is the
-- truth; every API process keeps the set in memory and refreshes it.
CREATE TABLE blocked_users (
    user_id    BIGINT       NOT NULL PRIMARY KEY,
    reason     VARCHAR(200) NOT NULL DEFAULT '',
    created_at DATETIME(3)  NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- +goose Down
DROP TABLE blocked_users;
ALTER TABLE sessions DROP COLUMN require_ticket;
