-- +goose Up
-- A draw (mode 'draw'): how long a drawn right lasts, the seed (secret
-- until drawn_at is set; its SHA-256 is published from creation) and when
-- the draw was made.
ALTER TABLE sessions
    ADD COLUMN right_ttl_seconds INT         NOT NULL DEFAULT 0,
    ADD COLUMN draw_seed         VARBINARY(32) NULL,
    ADD COLUMN drawn_at          DATETIME(3) NULL;

-- The recorded positions of a draw: 2 × total_stock of them (the winners
-- and a waitlist as long); a registrant without a row has lost.
-- right_until is the end of the right granted to the position, NULL while
-- it waits; a right is granted once (compare-and-set on NULL). The
-- unique user key makes a re-run of the draw write the same rows.
CREATE TABLE draw_entries (
    session_id  BIGINT      NOT NULL,
    position    INT         NOT NULL,
    user_id     BIGINT      NOT NULL,
    right_until DATETIME(3) NULL,
    PRIMARY KEY (session_id, position),
    UNIQUE KEY draw_entries_user (session_id, user_id)
);

-- +goose Down
DROP TABLE draw_entries;
ALTER TABLE sessions DROP COLUMN drawn_at, DROP COLUMN draw_seed, DROP COLUMN right_ttl_seconds;
