-- fixed_window.lua: count one attempt in a fixed window.
--
-- KEYS[1]  the counter of one subject in one scope (built by Keys::throttle)
-- ARGV[1]  window length in seconds (a positive integer)
--
-- Returns {count, pttl}:
--   count  the number of attempts in the current window, this one included
--   pttl   milliseconds until the window (and the counter) ends, >= 0
--
-- Milliseconds, not seconds: in a window's last 500 ms `TTL` rounds to 0,
-- which is a live counter, not an error. `PTTL` says how long is left, and
-- the caller rounds it up to whole seconds for `Retry-After`.
--
-- The first hit of a window creates the counter and starts its TTL; later
-- hits only increment it, so the window is never extended by traffic. The
-- TTL is (re)set whenever the counter has none (pttl < 0), so a counter can
-- never live forever, even one written by something other than this script.
local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl < 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
  pttl = tonumber(ARGV[1]) * 1000
end
return {count, pttl}
