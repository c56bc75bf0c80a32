-- Holders: the shoppers who hold units of a sold-out sale or held some
-- (their release stamped f:<user>), with the sale's mark as stockmark.lua
-- reads it, in one atomic step. A shopper not among them has no pin (a
-- pin is a win) and holds nothing: the lookup would refuse any key of
-- theirs SOLD_OUT (admission's sold-out memory answers them). Reads only.
-- KEYS: 1 stock, 2 buyers, 3 idem.
-- Returns {clock (unix ms), stock (-1: not preheated), latest keyed win
-- (unix ms, 0: none), reopened (unix ms, 0: never), user ids…}.
local t = redis.call('TIME')
local stamps = redis.call('HMGET', KEYS[3], 'm:won', 'm:reopened')
local out = {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),
  tonumber(redis.call('GET', KEYS[1]) or '-1'), tonumber(stamps[1] or '0'), tonumber(stamps[2] or '0')}
-- buyers: <user> → units held, <user>:slots → the slots' mask.
for _, f in ipairs(redis.call('HKEYS', KEYS[2])) do
  if not string.find(f, ':', 1, true) then out[#out + 1] = f end
end
local cursor = '0'
repeat
  local page = redis.call('HSCAN', KEYS[3], cursor, 'MATCH', 'f:*', 'COUNT', 1000)
  cursor = page[1]
  for i = 1, #page[2], 2 do out[#out + 1] = string.sub(page[2][i], 3) end
until cursor == '0'
return out
