-- Stock mark: a session's stock, or one item's of a sale of several, with
-- Redis's clock, the sale's latest keyed win and when the stock last came
-- back, read in one atomic step (seckill.StockMark). Reads only.
-- KEYS: 1 stock, 2 idem, 3 items. ARGV: 1 the item's SKU ('' for the
-- sale's stock).
-- Returns {clock (unix ms), stock (-1: not preheated, or no such item),
-- latest keyed win (unix ms, 0: none), reopened (unix ms, 0: never)}.
local t = redis.call('TIME')
local stock
local reopened = 'm:reopened'
if ARGV[1] ~= '' then
  stock = redis.call('HGET', KEYS[3], ARGV[1])
  reopened = reopened .. ':' .. ARGV[1]
else
  stock = redis.call('GET', KEYS[1])
end
local stamps = redis.call('HMGET', KEYS[2], 'm:won', reopened)
return {
  tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),
  tonumber(stock or '-1'),
  tonumber(stamps[1] or '0'),
  tonumber(stamps[2] or '0'),
}
