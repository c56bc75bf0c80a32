-- Cache an order view unless a newer one is cached already.
-- KEYS: 1 the session's order views; ARGV: 1 order number, 2 version (row
-- updated_at, unix µs), 3 view JSON. Returns 1 when written.
local vfield = ARGV[1] .. ':v'
local cached = tonumber(redis.call('HGET', KEYS[1], vfield) or '-1')
if cached > tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3], vfield, ARGV[2])
return 1
