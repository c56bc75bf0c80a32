-- +goose Up
-- Reserved and draw sales of several items: a registration names its item
-- (0 in a single-SKU sale, whose one item needs no name), and a draw
-- draws each item's stock among that item's registrants, its positions
-- numbered per item. Every earlier registration and position is a
-- single-SKU sale's: 0.
ALTER TABLE registrations
    ADD COLUMN sku_id BIGINT NOT NULL DEFAULT 0;

ALTER TABLE draw_entries
    ADD COLUMN sku_id BIGINT NOT NULL DEFAULT 0 AFTER session_id,
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (session_id, sku_id, position);

-- The stock each item's draw drew, fixed at its first try (the session's
-- drawn_stock stays their sum).
ALTER TABLE session_items
    ADD COLUMN drawn_stock INT NULL;

-- +goose Down
ALTER TABLE session_items DROP COLUMN drawn_stock;
DELETE FROM draw_entries WHERE sku_id <> 0;
ALTER TABLE draw_entries
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (session_id, position),
    DROP COLUMN sku_id;
ALTER TABLE registrations DROP COLUMN sku_id;
