-- Admission: the one atomic step that decides a purchase, for a batch of
-- concurrent attempts on one session (group commit: one round trip, each
-- attempt decided in arrival order exactly as if it ran alone).
-- KEYS: 1 stock, 2 buyers, 3 resv, 4 pending, 5 idem, 6 registrants,
--       7 rights, 8 items (one hash tag: one slot)
-- ARGV: 1 n, 2 key clock skew (ms), 3 the gate: '1' when only registrants
--       may buy (a reserved sale), '2' when only the holders of a live
--       right may (a draw), then n groups of 10: user id,
--       quantity, per-user limit, order number, now (unix ms), trace id,
--       idempotency key ('' for none), body fingerprint, the key's time
--       (unix ms, 0 for a key that carries none), the item's SKU ('' in a
--       single-SKU sale); an attempt with no order
--       number and a key is a lookup (redis.Gate.PinnedOrRefused): its
--       pin, or the refusal the script would give it, deciding nothing
-- A sale of several items keeps each one's stock in the items hash (SKU →
-- units) beside the sale's stock, which stays their sum: an item sells
-- out on its own (-1, the sale's stock left), the sale when its stock is 0.
-- Returns 5n values, per attempt {code, stock left in the sale, slot mask, order
-- number, reservation}, then the mark of the sale as the call leaves it
-- {clock (unix ms), stock (-1: not preheated), latest keyed win (unix ms,
-- 0: none), reopened (unix ms, 0: never)}, as stockmark.lua reads it: a
-- call that sold the sale out tells the API's sold-out memory at once
-- (admission.SoldOut); code 0 = reserved, -1 = sold out, -2 = over the
-- per-user limit, -3 = not preheated, -4 = order number taken by another
-- purchase, -5 = idempotency key reused with another body, -6 = a key
-- stamped ahead of Redis's clock by more than the skew, -7 = a reserved
-- sale and the shopper is not a registrant, or a draw and the shopper holds
-- no live unused right (nothing is touched). The order
-- number is the one holding the units (on a replay, the pinned one); the
-- reservation is its live record on a replay while its workflow start is
-- still pending ('' otherwise).
--
-- Idempotency lives in the idem hash, written in the same step as what it
-- describes, so it can never disagree with the stock:
--   o:<order no>        → "user|qty|mask" for every reservation made; it
--                         outlives the release, so a re-run of an attempt
--                         (a retry after a timeout) answers as the first
--                         run did instead of reserving again.
--   k:<user>:<key>      → "fingerprint|0|order no|mask": the pinned
--                         answer of an Idempotency-Key that reserved.
-- A refusal is never stored, so that losers cost no memory: a key holding
-- nothing is refused again when anything that could turn its refusal into
-- a win (units back on sale, its shopper's holdings down) happened after
-- the earliest moment it can have been seen, its time minus the skew
-- (seckill.KeyClockSkew). The stamps, in Redis's clock, bounded by the
-- winners:
--   m:reopened          → the latest time stock rose from below the limit
--   m:reopened:<sku>    → the same for one item of a sale of several: an
--                         attempt for an item reads its item's stamp
--                         (release.lua, addstock.lua, a rebuild)
--   f:<user>            → the latest time the user's holdings went down
--   m:won               → the latest keyed win (the API's in-memory
--                         sold-out answer to keyed requests reads it)
--   m:limit             → the per-user limit at the last win, for
--                         release.lua and addstock.lua
--
-- A draw's rights hash holds registrant → the right's end (unix ms), or 'u'
-- once the right bought: a right is used at most once, set in the step that
-- wins with it. A registrant, in the rights and in a reserved sale's
-- registrant set, is the user id, or in a sale of several items
-- 'user:sku' (redis.registrant): a registration buys its own item only.

local t = redis.call('TIME')
local clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local skew = tonumber(ARGV[2])
local gate = ARGV[3]

local function stockNow()
  return tonumber(redis.call('GET', KEYS[1]) or '0')
end

local function replayKey(pinned, fp)
  local pfp, code, no, mask = string.match(pinned, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
  if pfp ~= fp then return -5, stockNow(), 0, no, '' end
  code = tonumber(code)
  local resv = ''
  -- The record only while its start is pending: the caller starts the
  -- workflow again then, never for an order already started (settled
  -- orders keep their reservation; a start after Temporal's retention
  -- would make a second workflow).
  if code == 0 and redis.call('ZSCORE', KEYS[4], no) then resv = redis.call('HGET', KEYS[3], no) or '' end
  return code, stockNow(), tonumber(mask), no, resv
end

local function decide(user, qty, limit, orderNo, now, trace, sku)
  local made = redis.call('HGET', KEYS[5], 'o:' .. orderNo)
  if made then
    local muser, mqty, mmask = string.match(made, '^([^|]*)|([^|]*)|([^|]*)$')
    if muser == user and tonumber(mqty) == qty then return 0, stockNow(), tonumber(mmask) end
    return -4, stockNow(), 0
  end
  local stock = redis.call('GET', KEYS[1])
  if not stock then return -3, 0, 0 end
  stock = tonumber(stock)
  -- The limit before the stock: a shopper at the limit hears
  -- LIMIT_EXCEEDED whatever the stock, so a refused key's answer does not
  -- change when the sale sells out (refusals are not stored).
  local held = tonumber(redis.call('HGET', KEYS[2], user) or '0')
  if held + qty > limit then return -2, stock, 0 end
  if stock < qty then return -1, stock, 0 end
  if sku ~= '' then
    local item = redis.call('HGET', KEYS[8], sku)
    if not item then return -3, stock, 0 end
    if tonumber(item) < qty then return -1, stock, 0 end
  end
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
  local at = now
  if sku ~= '' then
    redis.call('HINCRBY', KEYS[8], sku, -qty)
    at = now .. ':' .. sku
  end
  redis.call('HSET', KEYS[2], user, held + qty, slotsField, bit.bor(mask, mine))
  -- The reservation record: redis.ReservationRecord in Go, trace id last.
  redis.call('HSET', KEYS[3], orderNo, user .. '|' .. qty .. '|' .. mine .. '|' .. at .. '|' .. trace)
  redis.call('ZADD', KEYS[4], now, orderNo)
  redis.call('HSET', KEYS[5], 'o:' .. orderNo, user .. '|' .. qty .. '|' .. mine, 'm:limit', limit)
  return 0, left, mine
end

-- stampedSince: whether the stamp field was set at or after since.
local function stampedSince(v, since)
  return v and tonumber(v) >= since
end

-- lookup answers a keyed attempt in a sale known to be sold out, reading
-- only: its pin, else the refusal admit would give it there (redis.refusal
-- decides the same way): its shopper's holdings went down since the key's
-- time minus the skew, or are at the limit now: -2; otherwise -1.
local function lookup(user, qty, limit, key, fp, kt)
  local pinned = redis.call('HGET', KEYS[5], 'k:' .. user .. ':' .. key)
  if pinned then return replayKey(pinned, fp) end
  if stampedSince(redis.call('HGET', KEYS[5], 'f:' .. user), kt - skew) or
      tonumber(redis.call('HGET', KEYS[2], user) or '0') + qty > limit then
    return -2, stockNow(), 0, '', ''
  end
  return -1, stockNow(), 0, '', ''
end

local function admit(user, qty, limit, orderNo, now, trace, key, fp, kt, sku)
  if orderNo == '' and key ~= '' then return lookup(user, qty, limit, key, fp, kt) end
  local kfield
  if key ~= '' then
    kfield = 'k:' .. user .. ':' .. key
    local pinned = redis.call('HGET', KEYS[5], kfield)
    if pinned then return replayKey(pinned, fp) end
  end
  -- Eligibility before anything that reads or writes the sale: a
  -- shopper who did not register costs one set lookup.
  local who = user
  if sku ~= '' then who = user .. ':' .. sku end
  if gate == '1' and redis.call('SISMEMBER', KEYS[6], who) == 0 then return -7, stockNow(), 0, orderNo, '' end
  local right
  if gate == '2' then
    right = redis.call('HGET', KEYS[7], who)
    -- A used right still answers the re-run of the attempt that used it
    -- (decide replays it from its order number).
    local rerun = right == 'u' and redis.call('HEXISTS', KEYS[5], 'o:' .. orderNo) == 1
    -- Lapsed by Redis's clock, the one the passes of rights read too.
    if not rerun and (not right or right == 'u' or tonumber(right) <= clock) then
      return -7, stockNow(), 0, orderNo, ''
    end
  end
  if kfield then
    if kt > clock + skew then return -6, stockNow(), 0, orderNo, '' end
    -- It may have been seen and refused before (a win is pinned): if what
    -- refused it may have changed since, it stays refused, with the
    -- refusal it most likely heard: its shopper's holdings went down (it
    -- was over the limit then), the shopper is over the limit now, else
    -- it found no stock (redis.refusal decides the same way).
    local since = kt - skew
    local reopened = 'm:reopened'
    if sku ~= '' then reopened = reopened .. ':' .. sku end
    local st = redis.call('HMGET', KEYS[5], reopened, 'f:' .. user)
    if stampedSince(st[2], since) then return -2, stockNow(), 0, orderNo, '' end
    if stampedSince(st[1], since) then
      if tonumber(redis.call('HGET', KEYS[2], user) or '0') + qty > limit then
        return -2, stockNow(), 0, orderNo, ''
      end
      return -1, stockNow(), 0, orderNo, ''
    end
  end
  local code, left, mask = decide(user, qty, limit, orderNo, now, trace, sku)
  if right and right ~= 'u' and code == 0 then
    redis.call('HSET', KEYS[7], who, 'u')
  end
  if kfield and code == 0 then
    redis.call('HSET', KEYS[5], kfield, fp .. '|0|' .. orderNo .. '|' .. mask, 'm:won', clock)
  end
  return code, left, mask, orderNo, ''
end

local n = tonumber(ARGV[1])
local out = {}
for i = 0, n - 1 do
  local a = 3 + i * 10
  local code, left, mask, no, resv = admit(ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]),
    ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], ARGV[a + 7], ARGV[a + 8], tonumber(ARGV[a + 9]), ARGV[a + 10])
  out[#out + 1] = code
  out[#out + 1] = left
  out[#out + 1] = mask
  out[#out + 1] = no
  out[#out + 1] = resv
end
out[#out + 1] = clock
out[#out + 1] = tonumber(redis.call('GET', KEYS[1]) or '-1')
local stamps = redis.call('HMGET', KEYS[5], 'm:won', 'm:reopened')
out[#out + 1] = tonumber(stamps[1] or '0')
out[#out + 1] = tonumber(stamps[2] or '0')
return out
