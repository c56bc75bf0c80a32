-- +goose Up
-- Operators' named API tokens (`seckill operators add`). Only the token's
-- SHA-256 is kept: a leaked copy of this table lets nobody in. A revoked
-- row stays, so the audit's names keep a meaning; its name may be given
-- again, and the new token replaces the row. last_used_at is written at
-- most once a minute per operator: a script calling every second must not
-- make every admin call a write. Names and hashes compare byte for byte
-- (binary collations): a name is an identifier the audit shows as given,
-- not a word to match loosely.
CREATE TABLE operators (
    id           BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name         VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    role         VARCHAR(16) NOT NULL,
    token_hash   CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    created_at   DATETIME(6) NOT NULL,
    last_used_at DATETIME(6) NULL,
    revoked_at   DATETIME(6) NULL,
    UNIQUE KEY operators_name (name),
    UNIQUE KEY operators_token_hash (token_hash)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- The role the operator who changed a session had then: a name alone
-- does not say what they were allowed. Older rows have none ('').
ALTER TABLE session_audit ADD COLUMN actor_role VARCHAR(16) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE session_audit DROP COLUMN actor_role;
DROP TABLE operators;
