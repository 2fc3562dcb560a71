#!/usr/bin/env bash
# Webhook deliveries under load (issue 39). Usage: bench/webhooks.sh [seconds] [connections]
#
# 1. Redirects with a link.clicked webhook on one busy link: the realistic
#    load of bench/redirect.sh (LINKS links, random, mixed user agents) plus
#    a single-code stream to the busy link, against the bare server in the
#    same run. Run it as: WEBHOOK=1 bench/redirect.sh (this script sets up
#    the receiver and the webhook through redirect.sh's WEBHOOK hook).
# 2. Delivery throughput: a burst of clicks on one link with a webhook,
#    then the time until the receiver has every message: deliveries per
#    second and the largest lag between a click and its delivery.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-5}
CONNS=${2:-8}
source bench/lib.sh
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
go build -o "$tmp/linkd" ./cmd/linkd
go build -o "$tmp/hookrecv" ./bench/hookrecv
KEY=svc_sk_bench_operator_key_0123456789
LINKD=127.0.0.1:18190
RECV=127.0.0.1:18192
LINKD_DATA_DIR="$tmp/data" LINKD_ADDR=$LINKD LINKD_INITIAL_API_KEY=$KEY LINKD_LOG_LEVEL=warn LINKD_CLICK_LIMIT=0 \
  LINKD_WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8 LINKD_DEBUG_ADDR=${PPROF:+127.0.0.1:18193} "$tmp/linkd" serve >"$tmp/linkd.log" 2>&1 &
"$tmp/hookrecv" -addr $RECV &
for _ in $(seq 100); do curl -sf http://$LINKD/healthz >/dev/null && curl -sf http://$RECV/stats >/dev/null && break; sleep 0.1; done
curl -sf -X POST http://$LINKD/v1/links -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d '{"original_url":"https://example.com/landing","custom_code":"b0","enable_conversion_tracking":false}' >/dev/null
curl -sf -X POST http://$LINKD/v1/webhooks -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d "{\"url\":\"http://$RECV/hook\",\"events\":[\"link.clicked\"]}" >/dev/null
START=$(date +%s%3N)
RES=$(wrk -t2 -c"$CONNS" -d"${DUR}s" -H 'User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36' http://$LINKD/b0 | awk '/requests in/ {print $1}')
END_LOAD=$(date +%s%3N)
# PPROF=file takes a CPU profile of the first 5 s of the drain.
[ -n "${PPROF:-}" ] && curl -sf -o "$PPROF" "http://127.0.0.1:18193/debug/pprof/profile?seconds=5" &
echo "clicks sent: $RES in $((END_LOAD - START)) ms ($((RES * 1000 / (END_LOAD - START))) clicks/s)"
for _ in $(seq 1200); do
  S=$(curl -sf http://$RECV/stats)
  N=$(echo "$S" | sed -E 's/.*"distinct":([0-9]+).*/\1/')
  [ "$N" -ge "$RES" ] && break
  sleep 0.1
done
S=$(curl -sf http://$RECV/stats)
FIRST=$(echo "$S" | sed -E 's/.*"first":([0-9]+).*/\1/'); LAST=$(echo "$S" | sed -E 's/.*"last":([0-9]+).*/\1/')
N=$(echo "$S" | sed -E 's/.*"distinct":([0-9]+).*/\1/')
echo "receiver: $S"
echo "delivered $N of $RES clicks; deliveries from first to last: $((LAST - FIRST)) ms = $((N * 1000 / (LAST - FIRST + 1))) deliveries/s; drained $((LAST - END_LOAD)) ms after the load ended"
curl -sf http://$LINKD/metrics | grep -E '^linkd_webhook_' || true
