#!/usr/bin/env bash
# Load test of short-link redirects: linkd's /{code} against a bare net/http
# redirect server, measured in the same run with the same load generator
# (wrk from Debian) and the same wrk script, then the clicks linkd counted
# against the redirects it answered. Usage: bench/redirect.sh [seconds] [connections]
#
# By default the load is what users make: LINKS=1000 links (10000 as an
# option) with conversion tracking on, each request to a random one of
# them, user agents mixed (desktop Chrome, iPhone Safari, Android Chrome,
# Instagram's in-app browser), one request in ten a QR scan (?qr=1).
# LINKS=1 is the single-code run of earlier measurements: one link without
# tracking, UA= sets its User-Agent (default a desktop Chrome; UA= empty
# sends none, as wrk does by default: such requests are counted too).
# WARMUP=0 skips the two seconds of load each server gets before the
# first round: the first round then measures a fresh linkd.
# With LINKD_EVENTSTORE=postgres://... and the server on this machine, the
# CPU of every process named postgres over linkd's round is printed per
# redirect beside linkd's (postgres_cpu_us_per_req).
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10}
CONNS=${2:-64}
THREADS=${THREADS:-2}
LINKS=${LINKS:-1000}
# Each server runs on its own default processors unless GOMAXPROCS is set:
# Go's one per CPU for the bare server, two more for linkd serve.
source bench/lib.sh
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
if [ -n "${LINKD_BIN:-}" ]; then cp "$LINKD_BIN" "$tmp/linkd"; else go build -o "$tmp/linkd" ./cmd/linkd; fi
go build -o "$tmp/bare" ./bench/bare
UA=${UA-'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36'}
UAH=(); [ -n "$UA" ] && [ "$LINKS" -le 1 ] && UAH=(-H "User-Agent: $UA")
KEY=svc_sk_bench_operator_key_0123456789
LINKD=127.0.0.1:18180
BARE=127.0.0.1:18181

# The click limit (LINKD_CLICK_LIMIT, 1,000 counted clicks per visitor,
# link and hour) stays on as users run it while the load cannot reach it:
# wrk is one address with four user agents, so 4 x LINKS visitor-links
# share the requests of all rounds (about 60,000/s at most here). With one
# link, or a run long enough to reach it, it is off (0): the benchmark
# measures counting, and uncounted clicks would show as missing.
ROUNDS=${ROUNDS:-1}
# WEBHOOK=1 makes b0 a busy link: BUSY percent of the requests (default 10
# with WEBHOOK=1, else 0) go to it, so the click limits are off.
BUSY=${BUSY:-$([ "${WEBHOOK:-0}" = 1 ] && echo 10 || echo 0)}
if [ "$BUSY" -gt 0 ]; then
  export LINKD_CLICK_LIMIT=${LINKD_CLICK_LIMIT-0} LINKD_CLICK_LIMIT_NETWORK=${LINKD_CLICK_LIMIT_NETWORK-0}
fi
if [ -z "${LINKD_CLICK_LIMIT+x}" ] && { [ "$LINKS" -le 1 ] || [ $((ROUNDS * DUR * 60000 / (4 * LINKS))) -ge 900 ]; }; then
  export LINKD_CLICK_LIMIT=0
fi
# The network limit (LINKD_CLICK_LIMIT_NETWORK, 10,000 counted clicks per
# client network and link whatever the user agent) likewise: wrk is one
# network, so LINKS network-links share every request.
if [ -z "${LINKD_CLICK_LIMIT_NETWORK+x}" ] && { [ "$LINKS" -le 1 ] || [ $((ROUNDS * DUR * 60000 / LINKS)) -ge 9000 ]; }; then
  export LINKD_CLICK_LIMIT_NETWORK=0
fi
echo "click limit: ${LINKD_CLICK_LIMIT:-default (1000)}, per network: ${LINKD_CLICK_LIMIT_NETWORK:-default (10000)}"
# WEBHOOK=1 adds a link.clicked webhook on the busy link b0 (bench/hookrecv
# answers it), so that the ratio shows what deliveries cost redirects
# (compare with BUSY=10 and no webhook).
if [ "${WEBHOOK:-0}" = 1 ]; then
  go build -o "$tmp/hookrecv" ./bench/hookrecv
  "$tmp/hookrecv" -addr 127.0.0.1:18182 &
  export LINKD_WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8
fi
# PROFILE=FILE takes a CPU profile of linkd over its last round's load;
# LINKD_BIN=FILE measures that binary instead of building this tree.
PROFILE=${PROFILE:-}
[ -n "$PROFILE" ] && export LINKD_DEBUG_ADDR=127.0.0.1:18189
# linkd's own durability default (interval embedded, every commit flushed on
# PostgreSQL: ADR 0132) unless LINKD_DURABILITY is set.
LINKD_DATA_DIR="$tmp/data" LINKD_ADDR=$LINKD LINKD_INITIAL_API_KEY=$KEY LINKD_LOG_LEVEL=warn \
  "$tmp/linkd" serve >"$tmp/linkd.log" 2>&1 &
LINKD_PID=$!
"$tmp/bare" -addr $BARE &
BARE_PID=$!
for _ in $(seq 100); do curl -sf http://$LINKD/healthz >/dev/null && curl -sf -o /dev/null http://$BARE/x -w '' 2>/dev/null; [ $? -eq 0 ] && break; sleep 0.1; done
curl -sf http://$LINKD/healthz >/dev/null

if [ "$LINKS" -le 1 ]; then
  curl -sf -X POST http://$LINKD/v1/links -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d '{"original_url":"https://example.com/landing","custom_code":"b0","utm_source":"bench","enable_conversion_tracking":false}' >/dev/null
else
  echo "creating $LINKS links..."
  create_links $LINKD $KEY "$LINKS"
fi
if [ "${WEBHOOK:-0}" = 1 ]; then
  B0=$(curl -sf http://$LINKD/v1/links/code/b0 | sed -E 's/.*"id":"([^"]+)".*/\1/')
  curl -sf -X POST http://$LINKD/v1/webhooks -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d "{\"url\":\"http://127.0.0.1:18182/hook\",\"events\":[\"link.clicked\"],\"link_ids\":[\"$B0\"]}" >/dev/null
  echo "webhook on b0 ($B0)"
fi
counted() { curl -sf http://$LINKD/v1/stats/workspaces/summary -H "Authorization: Bearer $KEY" | sed -E 's/.*"total_clicks":([0-9]+).*/\1/'; }

# One script for both servers: the same paths, headers and mix.
cat >"$tmp/load.lua" <<LUA
local links = $LINKS
local busy = $BUSY
local agents = {
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
  "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 330.0.0.33.111 (iPhone15,2; iOS 17_4; en_US; en; scale=3.00; 1179x2556; 600392290)",
}
function init(args) math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16)) end
request = function()
  if links <= 1 then return wrk.format("GET", "/b0") end
  local path = "/b" .. math.random(0, links - 1)
  if busy > 0 and math.random(100) <= busy then path = "/b0" end
  if math.random(10) == 1 then path = path .. "?qr=1" end
  return wrk.format("GET", path, { ["User-Agent"] = agents[math.random(#agents)] })
end
done = function(summary, latency, requests)
  local errs = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout
  io.write(string.format("RESULT requests=%d rps=%.0f p50_ms=%.3f p99_ms=%.3f errors=%d non3xx=%d\n",
    summary.requests, summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, errs, summary.errors.status))
end
LUA

run() { wrk -t"$THREADS" -c"$CONNS" -d"${DUR}s" --latency "${UAH[@]}" -s "$tmp/load.lua" "$1" | grep RESULT; }
# settle waits (30 s at most) until linkd is done with the work a round
# left it: the log segments its compactor left plain while it yielded to
# the load (linkd_eventstore_plain_bytes), projections catching up, store
# flushes; until then it uses more than a tenth of a CPU. So this work
# neither slows the bare server's next round nor goes unreported: its CPU
# is printed per request of the round before.
plain() { curl -sf http://$LINKD/metrics | awk '$1 == "linkd_eventstore_plain_bytes" {print $2}'; }
settle() {
  local p c0 c1
  for _ in $(seq 150); do
    c0=$(cpu $LINKD_PID); sleep 0.2; c1=$(cpu $LINKD_PID)
    [ $((c1 - c0)) -le $(($(getconf CLK_TCK) / 50)) ] || continue
    p=$(plain) # scraped only when idle: a scrape costs a few ms of CPU
    { [ -z "$p" ] || [ "$p" = 0 ]; } && return
  done
}
# WARMUP=0 measures a fresh linkd's first seconds too, as a load that
# starts right after the links are created meets it.
if [ "${WARMUP:-1}" != 0 ]; then
  echo "warm-up"; wrk -t2 -c16 -d2s "${UAH[@]}" -s "$tmp/load.lua" http://$BARE >/dev/null; wrk -t2 -c16 -d2s "${UAH[@]}" -s "$tmp/load.lua" http://$LINKD >/dev/null
fi
BEFORE=$(counted)
# ROUNDS=N alternates the two servers N times (this machine's speed drifts
# by tens of percent within minutes) and reports each round and the median
# ratio; the counts cover every round.
LREQ=0; LERR=0; RATIOS=()
num() { echo "$1" | sed -E "s/.*$2=([0-9.]+).*/\1/"; }
# mallocs is how many heap objects linkd has allocated (its /metrics): per
# redirect, a diagnostic beside the CPU.
mallocs() { curl -s "http://$LINKD/metrics" | awk '/^go_memstats_mallocs_total/{printf "%d", $2}'; }
for round in $(seq "$ROUNDS"); do
  C0=$(cpu $BARE_PID); B=$(run http://$BARE); C1=$(cpu $BARE_PID)
  BCPU=$(cpu_per_req $((C1 - C0)) "$B")
  echo "bare net/http: $B cpu_us_per_req=$BCPU"
  PROF_PID=""
  if [ -n "$PROFILE" ] && [ "$round" = "$ROUNDS" ]; then
    curl -s -o "$PROFILE" "http://$LINKD_DEBUG_ADDR/debug/pprof/profile?seconds=$((DUR - 1))" &
    PROF_PID=$!
  fi
  M0=$(mallocs); C0=$(cpu $LINKD_PID); P0=$(cpu_named postgres); L=$(run http://$LINKD); C1=$(cpu $LINKD_PID); P1=$(cpu_named postgres); M1=$(mallocs)
  [ -z "$PROF_PID" ] || wait "$PROF_PID"
  LCPU=$(cpu_per_req $((C1 - C0)) "$L")
  settle; C2=$(cpu $LINKD_PID)
  PGLINE=""; [ "$P1" -gt 0 ] && PGLINE=" postgres_cpu_us_per_req=$(cpu_per_req $((P1 - P0)) "$L")"
  echo "linkd /{code}: $L cpu_us_per_req=$LCPU deferred_cpu_us_per_req=$(cpu_per_req $((C2 - C1)) "$L")$PGLINE allocs_per_req=$(awk -v m=$((M1 - M0)) -v n="$(num "$L" requests)" 'BEGIN{printf "%.1f", m/n}')"
  RATIOS+=("$(awk -v a="$(num "$L" rps)" -v b="$(num "$B" rps)" 'BEGIN{printf "%.2f", a/b}')")
  LREQ=$((LREQ + $(num "$L" requests))); LERR=$((LERR + $(num "$L" non3xx)))
  [ "$ROUNDS" -gt 1 ] && echo "round $round: ratio ${RATIOS[-1]}, CPU per request linkd/bare $(awk -v a="$LCPU" -v b="$BCPU" 'BEGIN{printf "%.2f", a/b}')"
done
sleep 1 # the statistics projection applies the last clicks
AFTER=$(counted)
COUNTED=$((AFTER - BEFORE))
if [ "$ROUNDS" -gt 1 ]; then
  echo "ratio linkd/bare = $(printf '%s\n' "${RATIOS[@]}" | sort -n | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : sprintf("%.2f", (a[NR/2]+a[NR/2+1])/2))}') (median of ${RATIOS[*]})"
else
  echo "ratio linkd/bare = ${RATIOS[0]}"
fi
echo "redirects answered by wrk = $LREQ (non-3xx: $LERR); clicks counted = $COUNTED"
if [ "${WEBHOOK:-0}" = 1 ]; then
  echo "webhook receiver: $(curl -sf http://127.0.0.1:18182/stats)"
  curl -sf http://$LINKD/metrics | grep -E '^linkd_webhook_' || true
fi
