#!/usr/bin/env bash
# Load test of POST /api/events/sale with a secret key, on a store holding
# CLICKS click ids generated through the real write path (linkd generate
# --tracking: the RecordClick command into the event store; the click-id
# index is built by its projector when linkd serve starts).
#
# Usage: bench/sale.sh [seconds] [connections]
#   CLICKS=10000000 (default) click ids in the store; CUSTOMERS=100000
#   distinct customers the sales name (random), each sale with its own
#   eventId (EVENT_ID=0: without one); a tracking id is picked at random
#   from a sample of 100,000. The customers' ids start with
#   CUSTOMER_PREFIX, by default new for every run, so that a store kept
#   between runs (BENCH_DIR) does not give its customers a longer history
#   at every run: each run's shop has 100,000 customers who buy about once.
# It reports wrk's rps and latency, the answers that were not 200, and the
# server's resident memory (VmRSS, VmHWM) after the load: run it with
# CLICKS=10000 and CLICKS=10000000 to compare memory.
# LINKD_BIN=FILE runs that binary instead of building this tree (to compare
# commits on one store); PROFILE=FILE takes a CPU profile of the server
# over the measured load.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10}
CONNS=${2:-64}
THREADS=${THREADS:-2}
CLICKS=${CLICKS:-10000000}
CUSTOMERS=${CUSTOMERS:-100000}
EVENT_ID=${EVENT_ID:-1}
CUSTOMER_PREFIX=${CUSTOMER_PREFIX:-cus_$(date +%s)_}
# Each server runs on its own default processors unless GOMAXPROCS is set:
# Go's one per CPU for the bare server, two more for linkd serve.
source bench/lib.sh
tmp=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$tmp"
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; [ -n "${BENCH_DIR:-}" ] || rm -rf "$tmp"' EXIT
if [ -n "${LINKD_BIN:-}" ]; then cp "$LINKD_BIN" "$tmp/linkd"; else go build -o "$tmp/linkd" ./cmd/linkd; fi
PROFILE=${PROFILE:-}
KEY=svc_sk_bench_operator_key_0123456789
ADDR=127.0.0.1:18190
export LINKD_DATA_DIR="$tmp/data" LINKD_ADDR=$ADDR LINKD_INITIAL_API_KEY=$KEY LINKD_LOG_LEVEL=warn
[ -n "$PROFILE" ] && export LINKD_DEBUG_ADDR=127.0.0.1:18191

if [ ! -s "$tmp/tids" ]; then
  echo "generating $CLICKS tracked clicks..."
  "$tmp/linkd" generate --links 10000 --workspaces 1 --clicks "$CLICKS" --tracking --tracking-ids-out "$tmp/tids"
fi
start=$(date +%s)
"$tmp/linkd" serve >"$tmp/linkd.log" 2>&1 &
PID=$!
for _ in $(seq 3000); do curl -sf http://$ADDR/healthz >/dev/null 2>&1 && break; sleep 0.2; done
curl -sf http://$ADDR/healthz >/dev/null
echo "serving after $(( $(date +%s) - start )) s (projections caught up)"
rss() { awk '/^(VmRSS|VmHWM)/ {printf "%s %d MB  ", $1, $2/1024}' "/proc/$1/status"; echo; }
echo "memory before the load: $(rss $PID)"

cat >"$tmp/sale.lua" <<LUA
local tids = {}
for line in io.lines("$tmp/tids") do tids[#tids + 1] = line end
local customers = $CUSTOMERS
local with_event_id = $EVENT_ID == 1
local n = 0
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer $KEY"
wrk.headers["Content-Type"] = "application/json"
function init(args) math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16)) end
request = function()
  n = n + 1
  local body
  if with_event_id then
    body = string.format('{"trackingId":"%s","customer":{"externalId":"$CUSTOMER_PREFIX%d"},"amount":%d.%02d,"currency":"usd","eventId":"%s-%d"}',
      tids[math.random(#tids)], math.random(customers), math.random(1, 500), math.random(0, 99), tostring({}):sub(8), n)
  else
    body = string.format('{"trackingId":"%s","customer":{"externalId":"$CUSTOMER_PREFIX%d"},"amount":%d.%02d,"currency":"usd"}',
      tids[math.random(#tids)], math.random(customers), math.random(1, 500), math.random(0, 99))
  end
  return wrk.format(nil, "/api/events/sale", nil, body)
end
local non200 = 0
response = function(status) if status ~= 200 then non200 = non200 + 1 end end
done = function(summary, latency, requests)
  io.write(string.format("rps %.0f  p50 %.2f ms  p99 %.2f ms  max %.2f ms  non-2xx/3xx %d  requests=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, summary.errors.status, summary.requests))
end
LUA
echo "warm-up (3 s)"; wrk -t"$THREADS" -c"$CONNS" -d3s -s "$tmp/sale.lua" http://$ADDR >/dev/null
echo "POST /api/events/sale, $CONNS connections, $DUR s, $CLICKS click ids:"
# The server's CPU per request (user + system, from /proc) moves much less
# with the machine's other load than requests per second do.
C0=$(cpu $PID)
PROF_PID=""
if [ -n "$PROFILE" ]; then
  curl -s -o "$PROFILE" "http://$LINKD_DEBUG_ADDR/debug/pprof/profile?seconds=$((DUR - 1))" &
  PROF_PID=$!
fi
OUT=$(wrk -t"$THREADS" -c"$CONNS" -d"${DUR}s" --latency -s "$tmp/sale.lua" http://$ADDR | tail -1)
C1=$(cpu $PID)
[ -z "$PROF_PID" ] || wait "$PROF_PID"
echo "$OUT cpu_us_per_req=$(cpu_per_req $((C1 - C0)) "$OUT")"
echo "memory after the load: $(rss $PID)"
# Let the projections apply the load before the server stops, so that the
# next run on this store (BENCH_DIR) starts caught up: its memory before
# the load is then the server's, not that of a catch-up in progress.
caught_up() { curl -sf http://$ADDR/metrics | awk '/^linkd_projection_lag\{/ { if ($2 + 0 > 0) lag = 1 } END { exit lag }'; }
t0=$(date +%s)
for _ in $(seq 600); do caught_up && break; sleep 0.5; done
echo "projections caught up $(( $(date +%s) - t0 )) s after the load"
