-- wrk's summary in a form bench/load.py merges across runs: totals, then the latency histogram
-- (microseconds and counts of every distinct value).
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("SUMMARY %d %d %d %d %d %d %d\n", summary.requests, summary.duration, e.status,
                         e.connect, e.read, e.write, e.timeout))
  for i = 1, #latency do
    local value, count = latency(i)
    io.write(string.format("LAT %d %d\n", value, count))
  end
end
