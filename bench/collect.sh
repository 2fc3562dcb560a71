#!/usr/bin/env bash
# Load test of Radar collection: POST /api/v1/radar/collect with a
# publishable key, as the radar.js of many visitors sends it, against a bare
# net/http server answering 202 to the same requests (bench/bare), measured
# in the same run with the same wrk script. Usage: bench/collect.sh [seconds] [connections]
#
# The load is what sites send: VISITORS=100000 visitors (a random one per
# request, so sessions open and close), 90% page views over 200 paths and
# 10% custom events with props, four real user agents, an Origin on the
# key's allowed hostname, one page view in twenty carrying a trackingId
# (svc_tid) that joins a click. It reports rps, p50/p99, the answers that
# were not 202, the server's CPU per request for both servers, and the hits
# Radar counted against the requests linkd accepted.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10}
CONNS=${2:-64}
THREADS=${THREADS:-2}
VISITORS=${VISITORS:-100000}
# Each server runs on its own default processors unless GOMAXPROCS is set:
# Go's one per CPU for the bare server, two more for linkd serve.
source bench/lib.sh
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
go build -o "$tmp/linkd" ./cmd/linkd
go build -o "$tmp/bare" ./bench/bare
KEY=svc_sk_bench_operator_key_0123456789
LINKD=127.0.0.1:18182
BARE=127.0.0.1:18183
LINKD_DATA_DIR="$tmp/data" LINKD_ADDR=$LINKD LINKD_INITIAL_API_KEY=$KEY LINKD_LOG_LEVEL=warn \
  "$tmp/linkd" serve >"$tmp/linkd.log" 2>&1 &
LINKD_PID=$!
"$tmp/bare" -addr $BARE -status 202 &
BARE_PID=$!
for _ in $(seq 100); do curl -sf http://$LINKD/healthz >/dev/null && break; sleep 0.1; done
curl -sf http://$LINKD/healthz >/dev/null

api() { curl -sf -X POST "http://$LINKD$1" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -d "$2"; }
field() { sed -E 's/.*"'"$1"'":"([^"]+)".*/\1/'; }
PROJECT=$(api /v1/projects '{"name":"Bench site"}' | field id)
PK=$(api /v1/api-keys '{"name":"tracker","kind":"publishable","project_id":"'"$PROJECT"'","allowed_hostnames":["shop.example"]}' | field key)
# A few tracked clicks, so that some visits join one (the redirect's svc_tid).
api /v1/links '{"original_url":"https://shop.example/landing","custom_code":"c0","enable_conversion_tracking":true}' >/dev/null
TIDS=""
for _ in $(seq 20); do
  tid=$(curl -s -o /dev/null -w '%{redirect_url}' -A 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36' http://$LINKD/c0 | sed -nE 's/.*svc_tid=([^&]+).*/\1/p')
  [ -n "$tid" ] && TIDS="$TIDS\"$tid\","
done

cat >"$tmp/collect.lua" <<LUA
local visitors = $VISITORS
local tids = {${TIDS%,}}
local agents = {
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
  "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
}
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Publishable-Key"] = "$PK"
wrk.headers["Origin"] = "https://shop.example"
function init(args) math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16)) end
request = function()
  local v = math.random(visitors)
  local path = "/p/" .. math.random(200)
  local body
  if math.random(10) == 1 then
    body = string.format('{"type":"event","name":"Signup","props":{"plan":"pro","step":"%d"},"url":"https://shop.example%s","visitorId":"v%d"}', math.random(3), path, v)
  elseif #tids > 0 and math.random(20) == 1 then
    body = string.format('{"type":"pageview","url":"https://shop.example/landing?svc_tid=%s","referrer":"https://news.example/","visitorId":"v%d","trackingId":"%s"}', tids[math.random(#tids)], v, tids[math.random(#tids)])
  else
    body = string.format('{"type":"pageview","url":"https://shop.example%s?utm_source=newsletter","referrer":"https://www.google.com/","visitorId":"v%d"}', path, v)
  end
  wrk.headers["User-Agent"] = agents[math.random(#agents)]
  return wrk.format(nil, "/api/v1/radar/collect", nil, body)
end
local bad = 0
response = function(status) if status ~= 202 then bad = bad + 1 end end
done = function(summary, latency, requests)
  io.write(string.format("rps=%.0f p50=%.2fms p99=%.2fms non202=%d requests=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.status, summary.requests))
end
LUA
run() { wrk -t"$THREADS" -c"$CONNS" -d"${DUR}s" --latency -s "$tmp/collect.lua" "$1" | tail -1; }
W=$(DUR=3 run http://$LINKD); echo "warm-up (3 s): $W"
C0=$(cpu $BARE_PID); B=$(run http://$BARE); C1=$(cpu $BARE_PID)
echo "bare net/http: $B cpu_us_per_req=$(cpu_per_req $((C1 - C0)) "$B")"
C0=$(cpu $LINKD_PID); L=$(run http://$LINKD); C1=$(cpu $LINKD_PID)
echo "linkd collect: $L cpu_us_per_req=$(cpu_per_req $((C1 - C0)) "$L")"
rb=$(echo "$B" | sed -E 's/rps=([0-9]+).*/\1/'); rl=$(echo "$L" | sed -E 's/rps=([0-9]+).*/\1/')
echo "ratio linkd/bare: $(awk -v a="$rl" -v b="$rb" 'BEGIN{printf "%.2f", a / b}')"
# Everything accepted is an event in the log and, once projected, a hit.
START=$(date -u -d '-1 day' +%Y-%m-%dT%H:%M:%SZ); END=$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)
READ=$(api /v1/api-keys '{"name":"reports","access":"read_only","project_id":"'"$PROJECT"'"}' | field key)
curl -sf "http://$LINKD/api/v1/radar/overview?start=$START&end=$END" -H "Authorization: Bearer $READ" |
  sed -E 's/.*"pageviews":([0-9]+).*"events":([0-9]+).*/hits counted: pageviews=\1 events=\2 (accepted: warm-up + the run above)/'
