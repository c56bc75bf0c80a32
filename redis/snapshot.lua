-- Snapshot: the whole Redis side of one session at one instant, for
-- reconcile. Read-only; the keys share the session's hash tag (one slot, so
-- it also runs on Redis Cluster).
-- KEYS: 1 stock, 2 buyers, 3 resv, 4 pending (5 idem and 7 rights,
-- passed with the others, unused), 6 registrants, 8 items
-- Returns {stock or false, resv as a flat field/value list, pending count,
-- oldest pending score or false, buyers as a flat field/value list,
-- registrant count, items as a flat field/value list}.
-- It walks every reservation of the session while Redis waits: about a
-- millisecond per few thousand reservations, once per reconcile.
local oldest = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
return {
  redis.call('GET', KEYS[1]),
  redis.call('HGETALL', KEYS[3]),
  redis.call('ZCARD', KEYS[4]),
  oldest[2] or false,
  redis.call('HGETALL', KEYS[2]),
  redis.call('SCARD', KEYS[6]),
  redis.call('HGETALL', KEYS[8]),
}
