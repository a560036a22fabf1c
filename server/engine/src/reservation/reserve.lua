-- reserve.lua: the dual reservation taken before a first-access settlement.
--
-- KEYS[1]  the code's reservation   (Keys::reservation_code: {tenant:share} tag)
-- KEYS[2]  the learner's reservation (Keys::reservation_user: same tag, same slot)
-- ARGV[1]  owner: the request id of this settlement attempt
-- ARGV[2]  TTL in milliseconds (below the settlement transaction's timeout)
--
-- Returns exactly one of:
--   0  reserved: both keys now hold ARGV[1] with the TTL (a retry of the same
--      attempt re-takes and refreshes its own reservation)
--   1  the code is held by another attempt; nothing was written
--   2  the learner is busy with another attempt; nothing was written
--
-- The learner is checked first: a learner's own parallel requests (a video
-- player's Range requests) hold both keys, and must learn "busy, wait for
-- yourself" (2), not "someone else holds the code" (1). Both keys are
-- checked before either is written, so no branch leaves half a reservation. A reservation only turns losers away early: the
-- PostgreSQL settlement decides.
local user_owner = redis.call('GET', KEYS[2])
local code_owner = redis.call('GET', KEYS[1])
if user_owner and user_owner ~= ARGV[1] then
  return 2
end
if code_owner and code_owner ~= ARGV[1] then
  return 1
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 0
