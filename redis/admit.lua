-- Admission: the one atomic step that decides a purchase, for a batch of
-- concurrent attempts on one session (group commit: one round trip, each
-- attempt decided in arrival order exactly as if it ran alone).
-- KEYS: 1 stock, 2 buyers, 3 resv, 4 pending   (one hash tag: one slot)
-- ARGV: 1 n, then n groups of 6: user id, quantity, per-user limit,
--       order number, now (unix ms), trace id
-- Returns 3n integers, per attempt {code, stock left, slot mask}; code 0 =
-- reserved, -1 = sold out, -2 = over the per-user limit, -3 = not
-- preheated, -4 = order number taken.
local function admit(user, qty, limit, orderNo, now, trace)
  local stock = redis.call('GET', KEYS[1])
  if not stock then return -3, 0, 0 end
  stock = tonumber(stock)
  if stock < qty then return -1, stock, 0 end
  local held = tonumber(redis.call('HGET', KEYS[2], user) or '0')
  if held + qty > limit then return -2, stock, 0 end
  if redis.call('HEXISTS', KEYS[3], orderNo) == 1 then return -4, stock, 0 end
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
  if need > 0 then return -2, stock, 0 end
  local left = redis.call('DECRBY', KEYS[1], qty)
  redis.call('HSET', KEYS[2], user, held + qty, slotsField, bit.bor(mask, mine))
  redis.call('HSET', KEYS[3], orderNo, user .. '|' .. qty .. '|' .. mine .. '|' .. now .. '|' .. trace)
  redis.call('ZADD', KEYS[4], now, orderNo)
  return 0, left, mine
end

local n = tonumber(ARGV[1])
local out = {}
for i = 0, n - 1 do
  local a = 1 + i * 6
  local code, left, mine = admit(ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), ARGV[a + 4], ARGV[a + 5], ARGV[a + 6])
  out[#out + 1] = code
  out[#out + 1] = left
  out[#out + 1] = mine
end
return out
