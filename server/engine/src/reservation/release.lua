-- release.lua: compare-and-delete of a dual reservation.
--
-- KEYS[1]  the code's reservation
-- KEYS[2]  the learner's reservation
-- ARGV[1]  owner: the request id that took the reservation
--
-- Returns the number of keys deleted: 0, 1 or 2. A key is deleted only while
-- it still holds ARGV[1]; one that expired and was re-taken by another
-- attempt is left alone. Called after the settlement, whether it committed
-- or not; a crash in between is cleaned up by the TTL.
local released = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  released = released + redis.call('DEL', KEYS[1])
end
if redis.call('GET', KEYS[2]) == ARGV[1] then
  released = released + redis.call('DEL', KEYS[2])
end
return released
