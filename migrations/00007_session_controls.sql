-- +goose Up
-- Ops controls during a sale (POST /admin/v1/sessions/{id}/pause, /resume,
-- /end, /stock; PATCH before the start). paused stops new orders only.
ALTER TABLE sessions ADD COLUMN paused BOOLEAN NOT NULL DEFAULT FALSE;

-- Who changed a session, when, and what: one row per applied change, in
-- the change's own transaction. request_id makes a retried change apply
-- once per session.
CREATE TABLE session_audit (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  session_id BIGINT NOT NULL,
  action VARCHAR(16) NOT NULL,
  actor VARCHAR(64) NOT NULL,
  from_addr VARCHAR(64) NOT NULL,
  request_id VARCHAR(64) NOT NULL,
  detail TEXT NOT NULL,
  created_at DATETIME(3) NOT NULL,
  UNIQUE KEY session_audit_request (session_id, request_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- +goose Down
DROP TABLE session_audit;
ALTER TABLE sessions DROP COLUMN paused;
