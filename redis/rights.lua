-- A draw's rights into the hash admission checks (redis.Gate.LoadRights).
-- KEYS: 1 rights. ARGV: user id, the right's end (unix ms), repeated.
-- A field keeps the later end and, once used ('u'), stays used: a draw or
-- a pass re-run after a crash never hands a used right back, and a
-- resume's extension (a later end for the same right) moves it on.
for i = 1, #ARGV, 2 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  if not cur or (cur ~= 'u' and tonumber(cur) < tonumber(ARGV[i + 1])) then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 0
