-- One API's heartbeat in the fleet: it is alive until now + ttl, by Redis's
-- clock (the members' clocks may disagree; the server's is the one clock
-- they share). Members whose heartbeat lapsed are dropped.
-- KEYS: 1 the fleet set; ARGV: 1 member, 2 ttl in ms. Returns the live count.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], 2 * ttl)
return redis.call('ZCARD', KEYS[1])
