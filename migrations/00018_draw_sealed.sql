-- +goose Up
-- A draw's seed is no longer readable in MySQL before the draw: the worker
-- seals it (AES-GCM under SECKILL_DRAW_KEY) into draw_seed_sealed and
-- publishes its SHA-256 (draw_commitment); draw_seed holds the seed only
-- from the draw on, when it is published. registrants_count and
-- registrants_digest are the registrant list fixed when registration
-- closed; drawn_stock the stock the draw drew (2 × it positions).
ALTER TABLE sessions
    ADD COLUMN draw_seed_sealed   VARBINARY(128) NULL,
    ADD COLUMN draw_commitment    CHAR(64)       NULL,
    ADD COLUMN registrants_count  INT            NULL,
    ADD COLUMN registrants_digest CHAR(64)       NULL,
    ADD COLUMN drawn_stock        INT            NULL;

-- Seeds of sales made before: their commitment was published already.
-- An undrawn one stays readable until the worker seals it (its next
-- look at the sale, at the latest the draw) and clears draw_seed.
UPDATE sessions SET draw_commitment = SHA2(draw_seed, 256) WHERE draw_seed IS NOT NULL;

-- +goose Down
ALTER TABLE sessions DROP COLUMN drawn_stock, DROP COLUMN registrants_digest, DROP COLUMN registrants_count,
    DROP COLUMN draw_commitment, DROP COLUMN draw_seed_sealed;
