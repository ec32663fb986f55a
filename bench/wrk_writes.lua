-- The write part's load (bench/writes.py): every request a write, spread over many rows.
--   WRK_MODE       "create" (POST a new draft with a Markdown body and three tags) or "edit" (PATCH a title)
--   WRK_PATH       the path, with {channel} and {post} replaced per request
--   WRK_TARGETS    "channel/post,..." (creates use the channel only), taken in turn across wrk's threads,
--                  so the requests in flight at once are on different rows (posts and channels)
--   WRK_THREADS    wrk's -t; WRK_RUN a tag unique to this run (titles and keys never repeat)
--   WRK_IDEMPOTENCY=1  a unique Idempotency-Key on every request: the run, the thread and a counter
--   WRK_ETAGS      a file of "post etag" lines: every request sends If-Match with the post's tag,
--                  which each answer's ETag keeps fresh
-- The summary is wrk_report.lua's.
dofile("bench/wrk_report.lua")

local created = 0
function setup(thread)
  created = created + 1
  thread:set("id", created)
end

local mode = os.getenv("WRK_MODE")
local template = os.getenv("WRK_PATH")
local run = os.getenv("WRK_RUN")
local threads = tonumber(os.getenv("WRK_THREADS") or "2")
local idempotency = os.getenv("WRK_IDEMPOTENCY") == "1"
local etag_file = os.getenv("WRK_ETAGS")
local targets = {}
for channel, post in string.gmatch(os.getenv("WRK_TARGETS"), "(%d+)/(%d+)") do
  targets[#targets + 1] = {channel = channel, post = post}
end
local text = string.rep("Some **Markdown** body text of the post. ", 25)
local etags = {}
local sent = 0

function init(args)
  if etag_file then
    for line in io.lines(etag_file) do
      local post, etag = string.match(line, "^(%d+) (.+)$")
      etags[post] = etag
    end
  end
end

request = function()
  sent = sent + 1
  local tag = run .. "-" .. id .. "-" .. sent
  local target = targets[((sent - 1) * threads + id - 1) % #targets + 1]
  local path = string.gsub(string.gsub(template, "{channel}", target.channel), "{post}", target.post)
  -- wrk.format sends only the headers it is given: the key (-H) and Host with ours.
  local headers = {["Content-Type"] = "application/json"}
  for name, value in pairs(wrk.headers) do
    headers[name] = value
  end
  if idempotency then
    headers["Idempotency-Key"] = "bench-" .. tag
  end
  if etag_file then
    headers["If-Match"] = etags[target.post]
  end
  if mode == "create" then
    local body = '{"post":{"title":"Bench post ' .. tag .. '","body":"' .. text .. '","teaser":"Teaser of '
      .. tag .. '","tags":["django","news","python"]}}'
    return wrk.format("POST", path, headers, body)
  end
  return wrk.format("PATCH", path, headers, '{"post":{"title":"Edited ' .. tag .. '"}}')
end

-- Defined for every variant alike (wrk then reads each answer's body): the post's new tag.
response = function(status, headers, body)
  if status == 200 and etag_file then
    local post = string.match(body, '^{"data":{"id":(%d+)')
    if post then
      etags[post] = headers["ETag"]
    end
  end
end
