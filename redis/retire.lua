-- Retire: let a session that is over go, unless a reservation still waits
-- for its workflow start (admitted after the caller found the session
-- quiet: its order must not be left where no relay looks).
-- KEYS: 1 stock, 2 buyers, 3 resv, 4 pending, 5 idem, 6 orders, 7 stock
-- changes, 8 registrants, 9 rights, 10 items. ARGV: 1 retain (ms).
-- The stock goes at once: the admission script answers "not preheated"
-- for a session without it, so an API whose cached session still shows
-- the sale open cannot admit into a retired session. Everything else (the
-- order views, the idempotency records, the reservations of settled
-- orders) stays readable for retain.
-- Returns 1 when retired, 0 when a start is still pending.
if redis.call('ZCARD', KEYS[4]) > 0 then
  return 0
end
redis.call('DEL', KEYS[1])
for i = 2, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[1])
end
return 1
