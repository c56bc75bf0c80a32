-- +goose Up
-- POST /admin/v1/sessions with an Idempotency-Key: the sale the key
-- created and the fingerprint of the body it came with, so that a retry
-- gets that sale again and the key reused with another body is refused
-- (422 IDEMPOTENCY_MISMATCH). Written in the create's own transaction.
CREATE TABLE session_create_keys (
  request_id VARCHAR(64) NOT NULL PRIMARY KEY,
  session_id BIGINT NOT NULL,
  fingerprint CHAR(64) NOT NULL,
  created_at DATETIME(3) NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- +goose Down
DROP TABLE session_create_keys;
