-- The fast path's one round trip (config/server/fast_reads.py). KEYS[1]: the recorded answer.
-- ARGV: now (unix time), the window's end, the counter's time to live. Returns the answer, the
-- stored representation and the account's count, or false: Django answers, and nothing was counted.
local entry = redis.call('GET', KEYS[1])
if not entry then return false end
local f = {}
for line in string.gmatch(entry, '([^\n]*)\n') do
  f[#f + 1] = line
  if #f == 8 then break end
end
local now = tonumber(ARGV[1])
if now >= tonumber(f[1]) or now >= tonumber(f[2]) then return false end
for key, digest in string.gmatch(f[7], '(%S+) (%S+)') do
  local value = redis.call('GET', key)
  if not value or redis.sha1hex(value) ~= digest then return false end
end
local representation = redis.call('GET', f[5])
if not representation or string.sub(representation, 1, #f[6] + 1) ~= f[6] .. '\n' then return false end
local used = ''
if f[3] ~= '' then
  local counter = f[4] .. ARGV[2]
  local count = tonumber(redis.call('GET', counter) or '0')
  if count + 1 > tonumber(f[3]) then return false end
  used = redis.call('INCR', counter)
  redis.call('EXPIRE', counter, tonumber(ARGV[3]))
end
return {entry, representation, used}
