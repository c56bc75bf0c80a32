-- Add units to a session's live stock, once per operator request.
-- KEYS: 1 the session's stock, 2 the session's applied stock changes (a
-- hash: request id → units). ARGV: 1 units, 2 request id.
-- Returns {applied (1/0), stock after (-1: not preheated)}. A session not
-- preheated is left alone (the preheat loads MySQL's stock, which already
-- has the units), but the request is still recorded: a retry after the
-- preheat must not add them twice.
local function stock()
  return tonumber(redis.call('GET', KEYS[1]) or '-1')
end
if redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[1]) == 0 then
  return {0, stock()}
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {1, -1}
end
return {1, redis.call('INCRBY', KEYS[1], ARGV[1])}
