-- The mixed load: every WRK_WRITE_EVERY-th request of each connection's thread is a POST to
-- WRK_WRITE_PATH (a write that gives the channel a new version), the others the URL under test.
-- The summary is wrk_report.lua's.
dofile("bench/wrk_report.lua")

local write_path = os.getenv("WRK_WRITE_PATH")
local every = tonumber(os.getenv("WRK_WRITE_EVERY") or "50")
local sent = 0

request = function()
  sent = sent + 1
  if sent % every == 0 then
    return wrk.format("POST", write_path)
  end
  return wrk.format()
end
