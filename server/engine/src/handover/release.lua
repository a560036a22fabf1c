-- release.lua: ends a CSV download's lease (compare-and-delete).
--
-- KEYS[1]  the batch's download lease
-- KEYS[2]  (optional) the batch's parked CSV codes, deleted whatever the
--          lease holds: given only once the whole body has been handed to
--          the connection
-- ARGV[1]  the token the lease was taken with
--
-- Returns 1 if the lease still held ARGV[1] and is now deleted, 0 if not
-- (it expired, and maybe another download took it: that one is left
-- alone). Both keys share the batch's `{h:…}` hash tag (one cluster slot).
if KEYS[2] then
  redis.call('DEL', KEYS[2])
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
