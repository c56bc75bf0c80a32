-- Preheat: load a session's stock once; live stock is never overwritten.
-- KEYS: 1 the session's stock, 2 its stock changes (see addstock.lua),
-- 3 its items' stock (a sale of several items).
-- ARGV: 1 MySQL's stock, 2 how many items follow (0 for a single-SKU
-- sale), then that many pairs of SKU and MySQL's stock of it, then the
-- request ids of the stock changes that stock already holds (read in the
-- same MySQL snapshot).
-- The stock loaded is MySQL's plus every change recorded here as pending
-- that MySQL's figure does not hold yet: an add whose MySQL commit came
-- after the preheat read the stock, and whose Redis half ran before this
-- script, would otherwise be lost. Every id MySQL holds is recorded, so
-- the Redis half of such a change, coming after, adds nothing twice.
-- Returns the live stock.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return tonumber(redis.call('GET', KEYS[1]))
end
local n = tonumber(ARGV[2])
local items = {}
for i = 0, n - 1 do
  items[ARGV[3 + 2 * i]] = tonumber(ARGV[4 + 2 * i])
end
local held = {}
for i = 3 + 2 * n, #ARGV do
  held[ARGV[i]] = true
end
local stock = tonumber(ARGV[1])
local ops = redis.call('HGETALL', KEYS[2])
for i = 1, #ops, 2 do
  -- "pending:<units>", or "pending:<units>:<sku>" for an item's
  local units, sku = string.match(ops[i + 1], '^pending:(%d+):?(%d*)$')
  if units then
    if not held[ops[i]] then
      stock = stock + tonumber(units)
      if sku ~= '' and items[sku] then items[sku] = items[sku] + tonumber(units) end
    end
    redis.call('HSET', KEYS[2], ops[i], units)
  end
end
for id in pairs(held) do
  redis.call('HSETNX', KEYS[2], id, 'mysql')
end
for sku, units in pairs(items) do
  redis.call('HSET', KEYS[3], sku, units)
end
redis.call('SET', KEYS[1], stock)
return stock
