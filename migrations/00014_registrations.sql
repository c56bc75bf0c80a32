-- +goose Up
-- A sale's mode: first_come (everyone), or reserved (only the shoppers who
-- registered in [register_from, register_until) may buy).
ALTER TABLE sessions
    ADD COLUMN mode           VARCHAR(16) NOT NULL DEFAULT 'first_come',
    ADD COLUMN register_from  DATETIME(3) NULL,
    ADD COLUMN register_until DATETIME(3) NULL;

-- One row per shopper who registered for a sale: the truth Redis's
-- registrant set is rebuilt from. The primary key makes a registration
-- idempotent; listing a sale's registrants walks it in user id order.
CREATE TABLE registrations (
    session_id BIGINT      NOT NULL,
    user_id    BIGINT      NOT NULL,
    created_at DATETIME(6) NOT NULL,
    PRIMARY KEY (session_id, user_id)
);

-- +goose Down
DROP TABLE registrations;
ALTER TABLE sessions DROP COLUMN register_until, DROP COLUMN register_from, DROP COLUMN mode;
