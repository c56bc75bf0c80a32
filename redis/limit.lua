-- One request from a key's budget of rate requests a second, bursts of up
-- to a second's worth (GCRA: the key holds the theoretical arrival time of
-- the next request, in microseconds of Redis's clock, the one clock every
-- API shares). A refused request takes nothing.
-- KEYS: 1 the bucket; ARGV: 1 the rate. Returns 0 when allowed, else the
-- microseconds until a request would be.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or now), now)
local after = tat + 1000000 / tonumber(ARGV[1])
-- A second's worth of requests may be ahead of the clock, no more.
if after - now > 1000000 then
  return math.ceil(after - now - 1000000)
end
redis.call('SET', KEYS[1], string.format('%d', math.ceil(after)), 'PX', math.ceil((after - now) / 1000))
return 0
