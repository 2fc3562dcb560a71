#!/usr/bin/env bash
# A webhook whose receiver is down under click load (issue 39: a receiver
# down for an hour does not grow linkd's memory). Clicks on one link with a
# link.clicked webhook to a port nothing listens on; every 30 s it prints
# linkd's resident memory, its Go heap in use and the messages waiting in
# webhooks.db. WEBHOOK=0 runs the same load without the webhook (the
# baseline). Usage: bench/webhook-down.sh [seconds] [connections]
# LINKD_BIN=FILE measures that binary instead of building this tree.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-240}
CONNS=${2:-16}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
if [ -n "${LINKD_BIN:-}" ]; then cp "$LINKD_BIN" "$tmp/linkd"; else go build -o "$tmp/linkd" ./cmd/linkd; fi
KEY=svc_sk_bench_operator_key_0123456789
ADDR=127.0.0.1:18290
export LINKD_DATA_DIR="$tmp/data" LINKD_ADDR=$ADDR LINKD_INITIAL_API_KEY=$KEY LINKD_LOG_LEVEL=error
export LINKD_WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8 LINKD_CLICK_LIMIT=0 LINKD_CLICK_LIMIT_NETWORK=0
"$tmp/linkd" serve >"$tmp/linkd.log" 2>&1 &
PID=$!
for _ in $(seq 300); do curl -sf http://$ADDR/healthz >/dev/null 2>&1 && break; sleep 0.2; done
api() { curl -sf -X POST "http://$ADDR$1" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -d "$2" >/dev/null; }
api /v1/links '{"original_url":"https://example.com/x","custom_code":"down1"}'
[ "${WEBHOOK:-1}" = 1 ] && api /v1/webhooks '{"url":"http://127.0.0.1:18299/hook","events":["link.clicked"]}'
wrk -t1 -c"$CONNS" -d"${DUR}s" "http://$ADDR/down1" >"$tmp/wrk.log" 2>&1 &
for ((t = 30; t <= DUR; t += 30)); do
  sleep 30
  heap=$(curl -s "http://$ADDR/metrics" | awk '/^go_memstats_heap_inuse_bytes/ {printf "%d", $2/1048576}')
  rss=$(awk '/^VmRSS/ {printf "%d", $2/1024}' "/proc/$PID/status")
  msgs=$(sqlite3 "$tmp/data/webhooks.db" 'SELECT count(*) FROM messages' 2>/dev/null || echo "?")
  echo "t=${t}s rss=${rss}MB heap_inuse=${heap}MB messages_waiting=$msgs"
done
wait %2 2>/dev/null || true
grep -a "Requests/sec" "$tmp/wrk.log"
