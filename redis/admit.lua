-- Admission: the one atomic step that decides a purchase.
-- KEYS: 1 stock, 2 buyers, 3 resv, 4 pending   (one hash tag: one slot)
-- ARGV: 1 user id, 2 quantity, 3 per-user limit, 4 order number,
--       5 now (unix ms), 6 trace id
-- Returns {code, stock left, slot mask}; code 0 = reserved, -1 = sold out,
-- -2 = over the per-user limit, -3 = not preheated, -4 = order number taken.
local stock = redis.call('GET', KEYS[1])
if not stock then return {-3, 0, 0} end
stock = tonumber(stock)
local user, qty, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if stock < qty then return {-1, stock, 0} end
local held = tonumber(redis.call('HGET', KEYS[2], user) or '0')
if held + qty > limit then return {-2, stock, 0} end
if redis.call('HEXISTS', KEYS[3], ARGV[4]) == 1 then return {-4, stock, 0} end
-- Hand out qty free slots in 1..limit (bit i = slot i+1). MySQL keeps a
-- primary key on (session, user, slot), so a slot handed out twice (Redis
-- lost its data) can never become a second order.
local slotsField = user .. ':slots'
local mask = tonumber(redis.call('HGET', KEYS[2], slotsField) or '0')
local mine, need = 0, qty
for i = 0, limit - 1 do
  if need == 0 then break end
  local b = bit.lshift(1, i)
  if bit.band(mask, b) == 0 then
    mine = bit.bor(mine, b)
    need = need - 1
  end
end
if need > 0 then return {-2, stock, 0} end
local left = redis.call('DECRBY', KEYS[1], qty)
redis.call('HSET', KEYS[2], user, held + qty, slotsField, bit.bor(mask, mine))
redis.call('HSET', KEYS[3], ARGV[4], user .. '|' .. qty .. '|' .. mine .. '|' .. ARGV[5] .. '|' .. ARGV[6])
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[4])
return {0, left, mine}
