-- Release: give one reservation back, exactly once. Deleting the
-- reservation is the guard: a second call finds nothing and changes nothing.
-- KEYS: 1 stock, 2 buyers, 3 resv, 4 pending, 5 idem (the idempotency
-- records outlive the release; it stamps the changes that keep refused
-- keys refused, see admit.lua), 6 and 7 unused, 8 items (a sale of
-- several items: the units go back to the reservation's item too);
-- ARGV: 1 order number
-- Returns the units given back (0 when already released or unknown).
local r = redis.call('HGET', KEYS[3], ARGV[1])
if not r then return 0 end
-- The first fields of the record (redis.ReservationRecord:
-- user|qty|mask|ms[:sku]|trace).
local user, qty, mine, at = string.match(r, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|')
qty, mine = tonumber(qty), tonumber(mine)
local sku = string.match(at, ':(%d+)$')
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
-- A retired session has no stock (retire.lua): the units are not put up
-- for sale again after its end.
local t = redis.call('TIME')
local clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local before = redis.call('GET', KEYS[1])
if before then
  redis.call('INCRBY', KEYS[1], qty)
  local limit = tonumber(redis.call('HGET', KEYS[5], 'm:limit') or '1e18')
  if tonumber(before) < limit then
    redis.call('HSET', KEYS[5], 'm:reopened', clock)
  end
  -- An item reopens on its own (admit.lua reads the stamp of the item an
  -- attempt names): another size's unit coming back does not keep its
  -- refused keys refused.
  if sku and redis.call('HINCRBY', KEYS[8], sku, qty) - qty < limit then
    redis.call('HSET', KEYS[5], 'm:reopened:' .. sku, clock)
  end
end
redis.call('HSET', KEYS[5], 'f:' .. user, clock)
local held = tonumber(redis.call('HGET', KEYS[2], user) or '0') - qty
if held > 0 then
  redis.call('HSET', KEYS[2], user, held)
else
  redis.call('HDEL', KEYS[2], user)
end
local slotsField = user .. ':slots'
local mask = bit.band(tonumber(redis.call('HGET', KEYS[2], slotsField) or '0'), bit.bnot(mine))
if mask ~= 0 then
  redis.call('HSET', KEYS[2], slotsField, mask)
else
  redis.call('HDEL', KEYS[2], slotsField)
end
return qty
