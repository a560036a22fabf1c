-- remove_stale.lua: deletes a reservation key only while it is still stale.
--
-- KEYS[1]  a reservation key (a code's or a learner's)
-- ARGV[1]  the longest time to live a reservation may have, in ms
--
-- Returns 1 if the key was deleted: it has no expiry, or more time to live
-- than ARGV[1] (reserve.lua never writes either). Returns 0 if it is gone
-- or is a live reservation within its TTL: checked and deleted in one step,
-- so a reservation taken again meanwhile is never removed.
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -1 or ttl > tonumber(ARGV[1]) then
  return redis.call('DEL', KEYS[1])
end
return 0
