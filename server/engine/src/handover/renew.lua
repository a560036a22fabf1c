-- renew.lua: extends a CSV download's lease while its body keeps flowing
-- (compare-and-expire).
--
-- KEYS[1]  the batch's download lease
-- ARGV[1]  the token the lease was taken with
-- ARGV[2]  the lease's new time to live, in milliseconds
--
-- Returns 1 if the lease still held ARGV[1] and now lives ARGV[2] ms more,
-- 0 if it is no longer this download's (expired, maybe taken by another).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
