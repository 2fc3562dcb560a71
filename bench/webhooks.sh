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
#    second and the largest lag between a click and its delivery. Then a
#    second webhook replays every one of those clicks at once: the rate at
#    which that queue drains is the deliveries' own, whatever the clicks'.
#
# LINKD_BIN=FILE measures that binary instead of building this tree.
# RATE=N sends the clicks at N a second (bench/rateclicks) instead of as fast
# as wrk can: whether deliveries keep up with that rate, and the largest
# lag between a click and its delivery (the receiver's max_lag_ms).
#
# STORES (default "embedded") lists the event stores to measure, one after
# the other in the same run: embedded (the queue in SQLite) and postgres
# (the queue shared in PostgreSQL, ADR 0108: a throwaway cluster started
# here, as root, with Debian's postgresql; durable settings unless
# PGFAST=1). With both, the last line is the ratio postgres/embedded of the
# replay's deliveries per second.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-5}
CONNS=${2:-8}
STORES=${STORES:-embedded}
source bench/lib.sh
tmp=$(mktemp -d)
chmod 755 "$tmp"
pgdir=""
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  [ -n "$pgdir" ] && runuser -u postgres -- /usr/lib/postgresql/*/bin/pg_ctl -D "$pgdir/data" stop -m immediate >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
if [ -n "${LINKD_BIN:-}" ]; then cp "$LINKD_BIN" "$tmp/linkd"; else go build -o "$tmp/linkd" ./cmd/linkd; fi
go build -o "$tmp/hookrecv" ./bench/hookrecv
go build -o "$tmp/rateclicks" ./bench/rateclicks
KEY=svc_sk_bench_operator_key_0123456789
LINKD=127.0.0.1:18190
RECV=127.0.0.1:18192
PGPORT=18195

# start_postgres: a throwaway cluster in $pgdir on PGPORT; prints its DSN.
start_postgres() {
  mkdir -p "$pgdir" && chown postgres "$pgdir"
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  runuser -u postgres -- "$bin/initdb" -D "$pgdir/data" -U postgres -A trust -E UTF8 --locale=C >/dev/null
  local fast=""
  [ -n "${PGFAST:-}" ] && fast="-c synchronous_commit=off"
  runuser -u postgres -- "$bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w \
    -o "-p $PGPORT -k $pgdir -c listen_addresses=127.0.0.1 -c max_connections=200 $fast" start >/dev/null
  echo "postgres://postgres@127.0.0.1:$PGPORT/postgres?sslmode=disable"
}

# measure STORE: prints the figures of one store; the last line is
# "rate N" (deliveries per second).
measure() {
  local store=$1 es=""
  if [ "$store" = postgres ]; then
    pgdir="$tmp/pg"
    es=$(start_postgres)
  fi
  rm -rf "$tmp/data"
  LINKD_DATA_DIR="$tmp/data" LINKD_ADDR=$LINKD LINKD_INITIAL_API_KEY=$KEY LINKD_LOG_LEVEL=warn LINKD_CLICK_LIMIT=0 LINKD_CLICK_LIMIT_NETWORK=0 \
    LINKD_EVENTSTORE="$es" LINKD_WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8 LINKD_DEBUG_ADDR=${PPROF:+127.0.0.1:18193} \
    "$tmp/linkd" serve >"$tmp/linkd-$store.log" 2>&1 &
  local linkd_pid=$!
  "$tmp/hookrecv" -addr $RECV &
  local recv_pid=$!
  for _ in $(seq 300); do curl -sf http://$LINKD/healthz >/dev/null && curl -sf http://$RECV/stats >/dev/null && break; sleep 0.1; done
  curl -sf -X POST http://$LINKD/v1/links -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d '{"original_url":"https://example.com/landing","custom_code":"b0","enable_conversion_tracking":false}' >/dev/null
  curl -sf -X POST http://$LINKD/v1/webhooks -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d "{\"url\":\"http://$RECV/hook\",\"events\":[\"link.clicked\"]}" >/dev/null
  local START RES END_LOAD S N FIRST LAST
  START=$(date +%s%3N)
  local L0 L1
  L0=$(cpu "$linkd_pid")
  if [ -n "${RATE:-}" ]; then
    RES=$("$tmp/rateclicks" -url http://$LINKD/b0 -rate "$RATE" -d "${DUR}s" | tee /dev/stderr | awk '/^sent/ {print $2}')
  else
    RES=$(wrk -t2 -c"$CONNS" -d"${DUR}s" -H 'User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36' http://$LINKD/b0 | awk '/requests in/ {print $1}')
  fi
  END_LOAD=$(date +%s%3N)
  # PPROF=file takes a CPU profile of the first 5 s of the drain after the load.
  [ -n "${PPROF:-}" ] && curl -sf -o "$PPROF.$store" "http://127.0.0.1:18193/debug/pprof/profile?seconds=5" &
  echo "[$store] clicks sent: $RES in $((END_LOAD - START)) ms ($((RES * 1000 / (END_LOAD - START))) clicks/s)"
  for _ in $(seq 1200); do
    S=$(curl -sf http://$RECV/stats)
    N=$(echo "$S" | sed -E 's/.*"distinct":([0-9]+).*/\1/')
    [ "$N" -ge "$RES" ] && break
    sleep 0.1
  done
  L1=$(cpu "$linkd_pid")
  S=$(curl -sf http://$RECV/stats)
  FIRST=$(echo "$S" | sed -E 's/.*"first":([0-9]+).*/\1/'); LAST=$(echo "$S" | sed -E 's/.*"last":([0-9]+).*/\1/')
  N=$(echo "$S" | sed -E 's/.*"distinct":([0-9]+).*/\1/')
  echo "[$store] receiver: $S"
  echo "[$store] delivered $N of $RES clicks; deliveries from first to last: $((LAST - FIRST)) ms = $((N * 1000 / (LAST - FIRST + 1))) deliveries/s; drained $((LAST - END_LOAD)) ms after the load ended; linkd $(awk -v t=$((L1 - L0)) -v h="$(getconf CLK_TCK)" -v n="$N" 'BEGIN{printf "%.1f", t / h * 1e6 / n}') CPU µs a click and its delivery"
  # The replay of every click to a second webhook: the queue drains alone.
  local HOOK2 Q T0 N0 RATE
  N0=$N
  HOOK2=$(curl -sf -X POST http://$LINKD/v1/webhooks -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d "{\"url\":\"http://$RECV/hook\",\"events\":[\"link.clicked\"]}" | sed -E 's/.*"id":"([^"]+)".*/\1/')
  T0=$(date +%s%3N)
  local C0 C1
  C0=$(cpu "$linkd_pid")
  Q=$(curl -sf -X POST "http://$LINKD/v1/webhooks/$HOOK2/replay" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d "{\"start\":\"$(date -u -d @$((START / 1000 - 60)) +%Y-%m-%dT%H:%M:%SZ)\",\"end\":\"$(date -u -d @$((END_LOAD / 1000 + 60)) +%Y-%m-%dT%H:%M:%SZ)\"}" |
    sed -E 's/.*"queued":([0-9]+).*/\1/')
  # PPROF=file also profiles the first 5 s of the replay's drain.
  [ -n "${PPROF:-}" ] && curl -sf -o "$PPROF.$store.replay" "http://127.0.0.1:18193/debug/pprof/profile?seconds=5" &
  # and an execution trace of its first 2 s (go tool trace -pprof=sync FILE: where goroutines wait).
  [ -n "${PPROF:-}" ] && curl -sf -o "$PPROF.$store.replay.trace" "http://127.0.0.1:18193/debug/pprof/trace?seconds=2" &
  for _ in $(seq 1200); do
    N=$(curl -sf http://$RECV/stats | sed -E 's/.*"distinct":([0-9]+).*/\1/')
    [ "$N" -ge $((N0 + Q)) ] && break
    sleep 0.1
  done
  C1=$(cpu "$linkd_pid")
  LAST=$(curl -sf http://$RECV/stats | sed -E 's/.*"last":([0-9]+).*/\1/')
  RATE=$(((N - N0) * 1000 / (LAST - T0 + 1)))
  echo "[$store] replay: $Q messages queued, $((N - N0)) delivered in $((LAST - T0)) ms from the request = $RATE deliveries/s; linkd $(awk -v t=$((C1 - C0)) -v h="$(getconf CLK_TCK)" -v n=$((N - N0)) 'BEGIN{printf "%.1f", t / h * 1e6 / n}') CPU µs a delivery"
  curl -sf http://$LINKD/metrics | grep -E '^linkd_webhook_' | sed "s/^/[$store] /" || true
  kill "$linkd_pid" "$recv_pid" 2>/dev/null || true
  wait "$linkd_pid" "$recv_pid" 2>/dev/null || true
  if [ "$store" = postgres ]; then
    runuser -u postgres -- "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/pg_ctl" -D "$pgdir/data" stop -m fast >/dev/null
    rm -rf "$pgdir"; pgdir=""
  fi
  echo "rate $RATE"
}

declare -A rate
for store in $STORES; do
  out=$(measure "$store")
  echo "$out" | grep -v '^rate '
  rate[$store]=$(echo "$out" | awk '/^rate / {print $2}')
done
if [ -n "${rate[embedded]:-}" ] && [ -n "${rate[postgres]:-}" ]; then
  awk -v p="${rate[postgres]}" -v e="${rate[embedded]}" 'BEGIN{printf "replay deliveries/s: postgres %d, embedded %d: ratio %.2f\n", p, e, p / e}'
fi
