#!/usr/bin/env bash
# Many instances against one (issue 38, ADR 0106): the redirect load of
# bench/redirect.sh (LINKS tracked links, mixed user agents, QR scans)
# through HAProxy (round robin) first to one linkd serve, then to three,
# all on one PostgreSQL event store and one Kafka (kfake as a process of
# its own, internal/testsupport/kafkaserver), alternating ROUNDS times. It
# prints each round's requests per second and the ratio three/one, then
# checks that every answered redirect was counted. The same HAProxy, the
# same database and the same wrk script serve both sides.
# Usage: bench/many.sh [seconds] [connections]; CH_DSN=clickhouse://...
# puts the statistics in ClickHouse (shared by the instances).
# Needs Debian's postgresql, haproxy and wrk (apt-get install postgresql haproxy wrk), run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10}
CONNS=${2:-64}
LINKS=${LINKS:-1000}
ROUNDS=${ROUNDS:-2}
source bench/lib.sh
command -v haproxy >/dev/null || PATH=$PATH:/usr/sbin
command -v haproxy >/dev/null || { echo "haproxy is needed: apt-get install haproxy" >&2; exit 1; }
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'kill $(jobs -p) 2>/dev/null; su postgres -c "$PGBIN/pg_ctl -D $tmp/pg -m immediate stop" >/dev/null 2>&1; wait 2>/dev/null; rm -rf "$tmp"' EXIT
go build -o "$tmp/linkd" ./cmd/linkd
go build -o "$tmp/kafkaserver" ./internal/testsupport/kafkaserver
export LINKD_CLICK_LIMIT=0 LINKD_CLICK_LIMIT_NETWORK=0 # one wrk address: the load is a flood for the click limits

# PostgreSQL, durable, on a port of its own.
PGPORT=15439
mkdir "$tmp/pg" && chown postgres "$tmp/pg"
su postgres -c "$PGBIN/initdb -D $tmp/pg -A trust -U postgres" >/dev/null
su postgres -c "$PGBIN/pg_ctl -D $tmp/pg -l $tmp/pg/log -o '-p $PGPORT -k /tmp -c max_connections=200' -w start" >/dev/null
"$PGBIN/psql" -h 127.0.0.1 -p $PGPORT -U postgres -qc 'CREATE DATABASE bench' >/dev/null
"$tmp/kafkaserver" >"$tmp/kafka.addr" &
for _ in $(seq 50); do [ -s "$tmp/kafka.addr" ] && break; sleep 0.1; done
KEY=svc_sk_bench_operator_key_0123456789
COMMON=(LINKD_EVENTSTORE="postgres://postgres@127.0.0.1:$PGPORT/bench?sslmode=disable" LINKD_KAFKA_BROKERS="$(head -1 "$tmp/kafka.addr")"
  LINKD_KAFKA_PARTITIONS=6 LINKD_SECRET=6c696e6b642d62656e63682d6d616e792d696e7374616e6365732d6b65792121
  LINKD_DEFAULT_DOMAIN=go.example LINKD_INITIAL_API_KEY=$KEY LINKD_LOG_LEVEL=warn)
[ -n "${CH_DSN:-}" ] && COMMON+=(LINKD_CLICKHOUSE_DSN="$CH_DSN")
PIDS=()
start_linkd() { # N: instance N on port 18190+N
  env "${COMMON[@]}" LINKD_DATA_DIR="$tmp/d$1" LINKD_ADDR=127.0.0.1:$((18190 + $1)) "$tmp/linkd" serve >"$tmp/linkd$1.log" 2>&1 &
  PIDS[$1]=$!
  for _ in $(seq 600); do curl -sf http://127.0.0.1:$((18190 + $1))/healthz >/dev/null && return; sleep 0.1; done
  echo "linkd $1 did not start" >&2; cat "$tmp/linkd$1.log" >&2; exit 1
}
haproxy_for() { # N: HAProxy on 18189 balancing instances 1..N
  { printf 'global\n  maxconn 4096\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n'
    printf 'frontend f\n  bind 127.0.0.1:18189\n  default_backend b\nbackend b\n  balance roundrobin\n'
    for i in $(seq "$1"); do printf '  server s%d 127.0.0.1:%d\n' "$i" $((18190 + i)); done; } >"$tmp/haproxy$1.cfg"
  haproxy -f "$tmp/haproxy$1.cfg" -p "$tmp/haproxy.pid" -D
}
stop_haproxy() { kill "$(cat "$tmp/haproxy.pid")"; sleep 0.3; }
sed -n '/^cat >"\$tmp\/load.lua" <<LUA$/,/^LUA$/p' bench/redirect.sh | sed '1d;$d' | sed "s/\$LINKS/$LINKS/" >"$tmp/load.lua"
run() { wrk -t2 -c"$CONNS" -d"${DUR}s" --latency -s "$tmp/load.lua" http://127.0.0.1:18189 | grep RESULT; }
num() { echo "$1" | sed -E "s/.*$2=([0-9.]+).*/\1/"; }
counted() { curl -sf http://127.0.0.1:18191/v1/stats/workspaces/summary -H "Authorization: Bearer $KEY" | sed -E 's/.*"total_clicks":([0-9]+).*/\1/'; }

start_linkd 1
echo "creating $LINKS links..."
create_links 127.0.0.1:18191 $KEY "$LINKS"
start_linkd 2
start_linkd 3
ANSWERED=0; RATIOS=()
for round in $(seq "$ROUNDS"); do
  # One instance: the other two are stopped (SIGSTOP), as if absent.
  kill -STOP "${PIDS[2]}" "${PIDS[3]}"; haproxy_for 1
  ONE=$(run); stop_haproxy; kill -CONT "${PIDS[2]}" "${PIDS[3]}"
  echo "one instance:    $ONE"
  sleep 3 # the two others catch up with the round they missed
  haproxy_for 3
  THREE=$(run); stop_haproxy
  echo "three instances: $THREE"
  for r in "$ONE" "$THREE"; do
    ANSWERED=$((ANSWERED + $(num "$r" requests) - $(num "$r" non3xx)))
    [ "$(num "$r" errors)" = 0 ] || echo "errors: $r"
  done
  RATIOS+=("$(awk -v a="$(num "$THREE" rps)" -v b="$(num "$ONE" rps)" 'BEGIN{printf "%.2f", a / b}')")
  echo "round $round: three/one = ${RATIOS[-1]}"
done
echo "ratios: ${RATIOS[*]}"
for _ in $(seq 60); do [ "$(counted)" -ge "$ANSWERED" ] && break; sleep 0.5; done
echo "redirects answered: $ANSWERED, clicks counted: $(counted)"
