-- Add units to a session's live stock, once per operator request.
-- KEYS: 1 the session's stock, 2 the session's stock changes (a hash:
-- request id → units, "pending:<units>" for a change made before the
-- preheat, "mysql" for one the preheat found in MySQL's stock already),
-- 3 the session's idempotency records (units back on sale are stamped
-- there, see admit.lua), 4 its items' stock (a sale of several items).
-- ARGV: 1 units, 2 request id, 3 the item's SKU ('' in a single-SKU sale),
-- 4 the sale's per-user limit.
-- Returns {applied (1/0), stock after (-1: not preheated)}. A session not
-- preheated gets the change recorded as pending: the preheat adds it to
-- the stock it loads unless that stock already holds it (preheat.lua), so
-- an add racing the preheat is counted exactly once either way.
local function stock()
  return tonumber(redis.call('GET', KEYS[1]) or '-1')
end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then
  return {0, stock()}
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  local pending = 'pending:' .. ARGV[1]
  if ARGV[3] ~= '' then pending = pending .. ':' .. ARGV[3] end
  redis.call('HSET', KEYS[2], ARGV[2], pending)
  return {1, -1}
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
local t = redis.call('TIME')
local clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Units back on sale reopen it for keys refused before (admit.lua) when
-- the stock was below what one attempt may ask: the limit now, or the one
-- at the last win should an operator have changed it since. Before the
-- sale's first win that is the limit now, so an add to a sale that never
-- ran short leaves its keys as they were.
local limit = math.max(tonumber(ARGV[4]), tonumber(redis.call('HGET', KEYS[3], 'm:limit') or '0'))
if tonumber(redis.call('GET', KEYS[1])) < limit then
  redis.call('HSET', KEYS[3], 'm:reopened', clock)
end
-- An item reopens on its own, as in release.lua.
if ARGV[3] ~= '' and redis.call('HINCRBY', KEYS[4], ARGV[3], ARGV[1]) - tonumber(ARGV[1]) < limit then
  redis.call('HSET', KEYS[3], 'm:reopened:' .. ARGV[3], clock)
end
return {1, redis.call('INCRBY', KEYS[1], ARGV[1])}
