-- Stock mark: a session's stock with Redis's clock and its latest keyed
-- win, read in one atomic step (seckill.StockMark). Reads only.
-- KEYS: 1 stock, 2 idem.
-- Returns {clock (unix ms), stock (-1: not preheated), latest keyed win
-- (unix ms, 0: none)}.
local t = redis.call('TIME')
return {
  tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),
  tonumber(redis.call('GET', KEYS[1]) or '-1'),
  tonumber(redis.call('HGET', KEYS[2], 'm:won') or '0'),
}
