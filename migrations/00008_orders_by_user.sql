-- +goose Up
-- GET /api/v1/orders lists a shopper's orders newest first, a page at a
-- time (id < cursor): this key answers it without sorting the user's rows.
ALTER TABLE orders ADD KEY orders_user_newest (user_id, id);

-- +goose Down
ALTER TABLE orders DROP KEY orders_user_newest;
