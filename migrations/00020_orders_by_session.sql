-- +goose Up
-- The operators' order list pages newest first (id < cursor), most often
-- within one sale: this key answers it without sorting the sale's rows
-- (a user's list has orders_user_newest, the whole table its primary key).
ALTER TABLE orders ADD KEY orders_session_newest (session_id, id);

-- +goose Down
ALTER TABLE orders DROP KEY orders_session_newest;
