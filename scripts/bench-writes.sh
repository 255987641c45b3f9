#!/usr/bin/env bash
# Live writes (issue 36): agents posting attempts through the API with a
# token, as wrk drives them. Against a running failpass at BASE, with an agent
# token of PROJECT; for each connection count and each spread (the attempts
# spread over up to 43 of the project's reports, or all on one hot report):
# attempts/s, p50, p99, errors (non-2xx and socket errors), and the server's
# CPU time per request. Loopback only. Prints figures; asserts nothing.
#
#   scripts/bench-writes.sh BASE TOKEN PID REPORT_IDS...
#   CONNECTIONS="64 256", WRITE_SECONDS=20; PID is the server's (for its CPU time)
set -euo pipefail
base="$1"; token="$2"; server="$3"; shift 3
ids=("$@")
connections="${CONNECTIONS:-64 256}"
seconds="${WRITE_SECONDS:-20}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nonce="$(date +%s%N)"

# The server's CPU time so far, in clock ticks (user + system).
ticks() { awk '{ print $14 + $15 }' "/proc/$server/stat"; }

run() { # label, connections, report ids...
  local label="$1" conns="$2"; shift 2
  local lua="$tmp/w.lua" list
  list=$(printf '%s,' "$@")
  cat > "$lua" <<LUA
local ids = { ${list%,} }
local token = "$token"
n = 0
local count = 0
local threads = {}
function setup(thread)
  count = count + 1
  thread:set("tid", count)
  table.insert(threads, thread)
end
function init(args) errors = 0 end
function request()
  n = n + 1
  local body = string.format(
    '{"report_id":%d,"agent":"wrk-agent","model":"wrk-model","verdict":"lead","verdict_source":"llm",' ..
    '"cost_usd":0.02,"wall_seconds":12.5,"tokens_in":1000,"tokens_out":200,' ..
    '"candidate":"import torch\\\\nassert False","attempt_key":"$nonce-$label-$conns-%d-%d"}',
    ids[n % #ids + 1], tid, n)
  return wrk.format("POST", "/api/v1/attempts",
    { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token }, body)
end
function response(status, headers, body)
  if status ~= 201 then
    errors = errors + 1
    if errors == 1 then io.stderr:write("first refusal: " .. status .. " " .. body .. "\\n") end
  end
end
function done(summary, latency, requests)
  local e = 0
  for _, t in ipairs(threads) do e = e + (t:get("errors") or 0) end
  local s = summary.errors
  io.write(string.format("RESULT %.0f %.1f %.1f %d %d\\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, e + s.connect + s.read + s.write + s.timeout, summary.requests))
end
LUA
  local t0 t1
  t0=$(ticks)
  wrk -t 2 -c "$conns" -d "${seconds}s" --timeout 10s -s "$lua" "$base" > "$tmp/out" 2> "$tmp/err" || true
  t1=$(ticks)
  local hz; hz=$(getconf CLK_TCK)
  read -r _ rate p50 p99 errors total < <(grep '^RESULT' "$tmp/out")
  local cpu_us
  cpu_us=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" -v n="$total" 'BEGIN { printf "%.0f", (b - a) / hz * 1e6 / (n > 0 ? n : 1) }')
  printf '%-34s %6s %12s %9s %9s %7s %14s\n' "$label" "$conns" "$rate" "$p50" "$p99" "$errors" "$cpu_us"
  [ -s "$tmp/err" ] && sed 's/^/    /' "$tmp/err" | head -3
  return 0
}

printf '%-34s %6s %12s %9s %9s %7s %14s\n' "live writes (POST /api/v1/attempts)" conns "attempts/s" "p50 ms" "p99 ms" errors "server µs/req"
for c in $connections; do
  run "spread over ${#ids[@]} reports" "$c" "${ids[@]}"
  run "one hot report" "$c" "${ids[0]}"
done
