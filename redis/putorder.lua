-- Cache an order view unless a newer one is cached already.
-- KEYS: 1 the session's order views; ARGV: 1 order number, 2 version (row
-- updated_at, unix µs), 3 view JSON, 4 (optional) '1': the view was not read
-- back from the row, so it loses a tie (a change in the same millisecond,
-- read from the row, is the newer). Returns 1 when written.
local vfield = ARGV[1] .. ':v'
local cached = tonumber(redis.call('HGET', KEYS[1], vfield) or '-1')
local version = tonumber(ARGV[2])
if cached > version or (cached == version and ARGV[4] == '1') then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3], vfield, ARGV[2])
return 1
