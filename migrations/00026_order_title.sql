-- +goose Up
-- An order carries its item's title (a size: "EU 38"), as it was when the
-- shopper won, like its price: shoppers and customer service read what
-- was bought. Orders made before are left '' (omitted in their JSON).
ALTER TABLE orders ADD COLUMN title VARCHAR(200) NOT NULL DEFAULT '' AFTER sku_id;

-- +goose Down
ALTER TABLE orders DROP COLUMN title;
