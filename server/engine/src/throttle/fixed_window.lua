-- fixed_window.lua: count one attempt in a fixed window.
--
-- KEYS[1]  the counter of one subject in one scope (built by Keys::throttle)
-- ARGV[1]  window length in seconds (a positive integer)
--
-- Returns {count, ttl}:
--   count  the number of attempts in the current window, this one included
--   ttl    seconds until the window (and the counter) ends, >= 1
--
-- The first hit of a window creates the counter and starts its TTL; later
-- hits only increment it, so the window is never extended by traffic. The
-- TTL is (re)set whenever the counter has none (ttl < 0), so a counter can
-- never live forever, even one written by something other than this script.
local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
local ttl = redis.call('TTL', KEYS[1])
if ttl < 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
