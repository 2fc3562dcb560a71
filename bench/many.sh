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
# puts the statistics in ClickHouse (shared by the instances): each round
# then also prints how long after it every click it answered was in them.
# LINKD_BIN=FILE runs that binary instead of building one.
# APART=1: the three instances share nothing (a database and a Kafka each,
# the links made on each): three deployments of one instance on the same
# machine, the floor of what splitting the load costs here without any
# coordination, to set beside the shared run's ratio (not with CH_DSN).
# Needs Debian's postgresql, haproxy and wrk (apt-get install postgresql haproxy wrk), run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10}
CONNS=${2:-64}
LINKS=${LINKS:-1000}
ROUNDS=${ROUNDS:-2}
APART=${APART:-}
[ -n "$APART" ] && [ -n "${CH_DSN:-}" ] && { echo "APART=1 and CH_DSN do not go together" >&2; exit 1; }
source bench/lib.sh
command -v haproxy >/dev/null || PATH=$PATH:/usr/sbin
command -v haproxy >/dev/null || { echo "haproxy is needed: apt-get install haproxy" >&2; exit 1; }
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'kill $(jobs -p) 2>/dev/null; su postgres -c "$PGBIN/pg_ctl -D $tmp/pg -m immediate stop" >/dev/null 2>&1; wait 2>/dev/null; rm -rf "$tmp"' EXIT
if [ -n "${LINKD_BIN:-}" ]; then cp "$LINKD_BIN" "$tmp/linkd"; else go build -o "$tmp/linkd" ./cmd/linkd; fi
go build -o "$tmp/kafkaserver" ./internal/testsupport/kafkaserver
export LINKD_CLICK_LIMIT=0 LINKD_CLICK_LIMIT_NETWORK=0 # one wrk address: the load is a flood for the click limits

# PostgreSQL, durable, on a port of its own.
PGPORT=15439
mkdir "$tmp/pg" && chown postgres "$tmp/pg"
su postgres -c "$PGBIN/initdb -D $tmp/pg -A trust -U postgres" >/dev/null
PGOPTS="-p $PGPORT -k /tmp -c max_connections=200"
# PGSTAT=1: pg_stat_statements on; the statements that took most of the
# server's time in the last three-instance round are printed at the end.
[ -n "${PGSTAT:-}" ] && PGOPTS="$PGOPTS -c shared_preload_libraries=pg_stat_statements"
PGOPTS="$PGOPTS ${PGEXTRA:-}" # more server settings, as -c name=value
su postgres -c "$PGBIN/pg_ctl -D $tmp/pg -l $tmp/pg/log -o '$PGOPTS' -w start" >/dev/null
DBS=(bench); [ -n "$APART" ] && DBS=(bench bench2 bench3)
for db in "${DBS[@]}"; do "$PGBIN/psql" -h 127.0.0.1 -p $PGPORT -U postgres -qc "CREATE DATABASE $db" >/dev/null; done
[ -n "${PGSTAT:-}" ] && "$PGBIN/psql" -h 127.0.0.1 -p $PGPORT -U postgres -d bench -qc 'CREATE EXTENSION pg_stat_statements' >/dev/null
for i in $(seq ${#DBS[@]}); do "$tmp/kafkaserver" >"$tmp/kafka$i.addr" &
  for _ in $(seq 50); do [ -s "$tmp/kafka$i.addr" ] && break; sleep 0.1; done; done
KEY=svc_sk_bench_operator_key_0123456789
COMMON=(LINKD_KAFKA_PARTITIONS=6 LINKD_SECRET=6c696e6b642d62656e63682d6d616e792d696e7374616e6365732d6b65792121
  LINKD_DEFAULT_DOMAIN=go.example LINKD_INITIAL_API_KEY=$KEY LINKD_LOG_LEVEL=warn)
[ -n "${CH_DSN:-}" ] && COMMON+=(LINKD_CLICKHOUSE_DSN="$CH_DSN")
PIDS=()
PROFILE=${PROFILE:-} # a directory: CPU profiles of every instance in each three-instance round
[ -n "$PROFILE" ] && mkdir -p "$PROFILE"
start_linkd() { # N: instance N on port 18190+N (its profiler on 18290+N with PROFILE)
  dbg=""; [ -n "$PROFILE" ] && dbg=127.0.0.1:$((18290 + $1))
  local s=1; [ -n "$APART" ] && s=$1 # the deployment it belongs to
  env "${COMMON[@]}" LINKD_EVENTSTORE="postgres://postgres@127.0.0.1:$PGPORT/${DBS[$((s - 1))]}?sslmode=disable" \
    LINKD_KAFKA_BROKERS="$(head -1 "$tmp/kafka$s.addr")" LINKD_DEBUG_ADDR=$dbg LINKD_DATA_DIR="$tmp/d$1" LINKD_ADDR=127.0.0.1:$((18190 + $1)) "$tmp/linkd" serve >"$tmp/linkd$1.log" 2>&1 &
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
sed -n '/^cat >"\$tmp\/load.lua" <<LUA$/,/^LUA$/p' bench/redirect.sh | sed '1d;$d' | sed "s/\$LINKS/$LINKS/; s/\$BUSY/0/" >"$tmp/load.lua"
run() { wrk -t2 -c"$CONNS" -d"${DUR}s" --latency -s "$tmp/load.lua" http://127.0.0.1:18189 | grep RESULT; }
# cpu_ms NAME...: CPU time (ms) used so far by the processes of these names.
cpu_ms() { echo $(($(cpu_named "$@") * 1000 / $(getconf CLK_TCK))); }
# where: CPU ms per 1,000 requests of linkd, PostgreSQL and the rest, between two cpu snapshots.
snap() { echo "$(cpu_ms linkd) $(cpu_ms postgres) $(cpu_ms haproxy wrk kafkaserver)"; }
where() { # BEFORE AFTER REQUESTS
  read -r l0 p0 o0 <<<"$1"; read -r l1 p1 o1 <<<"$2"
  awk -v l=$((l1 - l0)) -v p=$((p1 - p0)) -v o=$((o1 - o0)) -v n="$3" \
    'BEGIN{printf "CPU ms per 1,000 requests: linkd %.0f, PostgreSQL %.0f, HAProxy+wrk+Kafka %.0f", l*1000/n, p*1000/n, o*1000/n}'; }
num() { echo "$1" | sed -E "s/.*$2=([0-9.]+).*/\1/"; }
count_on() { curl -sf "http://127.0.0.1:$1/v1/stats/workspaces/summary" -H "Authorization: Bearer $KEY" | sed -E 's/.*"total_clicks":([0-9]+).*/\1/'; }
counted() { [ -z "$APART" ] && { count_on 18191; return; }; echo $(($(count_on 18191) + $(count_on 18192) + $(count_on 18193))); }
# wait_counted: the clicks counted once the statistics stop moving (with
# ClickHouse; without, at once).
wait_counted() { local a b; a=$(counted); [ -n "${CH_DSN:-}" ] || { echo "$a"; return; }
  for _ in $(seq 100); do sleep 0.3; b=$(counted); [ "$a" = "$b" ] && break; a=$b; done; echo "$b"; }
# caught_up BASE WRK_LINE: with ClickHouse, how long after a round that
# began with BASE clicks counted every click it answered was in the
# statistics (5 s is what DECISIONS allows; given up after 120 s).
caught_up() {
  [ -n "${CH_DSN:-}" ] || return 0
  local t0 want n; t0=$(date +%s%N); want=$(($1 + $(num "$2" requests)))
  while n=$(counted); [ "$n" -lt "$want" ] && [ $(($(date +%s%N) - t0)) -lt 120000000000 ]; do sleep 0.1; done
  local what="every click in them"; [ "$n" -ge "$want" ] || what="$((want - n)) clicks still missing"
  echo "  statistics: $what $(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN{printf "%.1f", (b-a)/1e9}') s after the round"
}

start_linkd 1
echo "creating $LINKS links..."
create_links 127.0.0.1:18191 $KEY "$LINKS"
start_linkd 2
start_linkd 3
[ -z "$APART" ] || { create_links 127.0.0.1:18192 $KEY "$LINKS"; create_links 127.0.0.1:18193 $KEY "$LINKS"; }
ANSWERED=0; RATIOS=()
for round in $(seq "$ROUNDS"); do
  # One instance: the other two are stopped (SIGSTOP), as if absent.
  BASE=$(wait_counted)
  kill -STOP "${PIDS[2]}" "${PIDS[3]}"; haproxy_for 1
  # Instance 1 alone as it would be without the others: their presence
  # gone (5 s) and its writer back to the versions it knows (10 s after
  # it last met another's append). Measured at once, the one-instance
  # round ran partly as one of three, which flattered the ratio.
  [ -n "$APART" ] || sleep "${ALONE_AFTER:-11}"
  c0=$(snap); ONE=$(run); c1=$(snap); stop_haproxy; kill -CONT "${PIDS[2]}" "${PIDS[3]}"
  STATS=$(caught_up "$BASE" "$ONE") # the two others own partitions of the statistics' groups
  echo "one instance:    $ONE"
  echo "  $(where "$c0" "$c1" "$(num "$ONE" requests)")"
  [ -z "$STATS" ] || echo "$STATS"
  sleep 3 # the two others catch up with the round they missed
  haproxy_for 3
  BASE=$(wait_counted)
  CURLS=()
  if [ -n "$PROFILE" ]; then
    for i in 1 2 3; do
      curl -s -o "$PROFILE/three-r$round-i$i.pprof" "http://127.0.0.1:$((18290 + i))/debug/pprof/profile?seconds=$((DUR - 2))" &
      CURLS+=($!)
    done
  fi
  [ -n "${PGSTAT:-}" ] && "$PGBIN/psql" -h 127.0.0.1 -p $PGPORT -U postgres -d bench -qAtc 'SELECT pg_stat_statements_reset()' >/dev/null
  c0=$(snap); THREE=$(run); c1=$(snap); stop_haproxy
  STATS=$(caught_up "$BASE" "$THREE")
  [ -n "${PGSTAT:-}" ] && "$PGBIN/psql" -h 127.0.0.1 -p $PGPORT -U postgres -d bench -qAt -F ' | ' -c \
    "SELECT calls, round(total_exec_time::numeric, 0) AS ms, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 110) FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 14" >"$tmp/pgstat"
  echo "three instances: $THREE"
  echo "  $(where "$c0" "$c1" "$(num "$THREE" requests)")"
  [ -z "$STATS" ] || echo "$STATS"
  [ ${#CURLS[@]} -eq 0 ] || wait "${CURLS[@]}"
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
[ -z "${PGSTAT:-}" ] || { echo "PostgreSQL, last three-instance round: calls | ms | rows | statement"; cat "$tmp/pgstat"; }

# An API read on another instance right after a write: READS times, a
# link renamed on instance 1, then read on instance 2 (or 3): the read's
# time, with the rename's as the same-run baseline (a write on one
# instance, no waiting for another).
READS=${READS:-300}
[ -z "$APART" ] || exit 0 # no shared deployment to read from
H=(-H "Authorization: Bearer $KEY" -H "Content-Type: application/json")
ID=$(curl -sf "${H[@]}" http://127.0.0.1:18191/v1/links -d '{"original_url":"https://example.com/raw"}' | sed -E 's/.*"id":"([^"]+)".*/\1/')
: >"$tmp/raw"
for i in $(seq "$READS"); do
  w=$(curl -sf -o /dev/null -w '%{time_total}' "${H[@]}" -X PUT "http://127.0.0.1:18191/v1/links/$ID" -d "{\"name\":\"n$i\"}")
  r=$(curl -sf -w ' %{time_total}' "${H[@]}" "http://127.0.0.1:$((18191 + 1 + i % 2))/v1/links/$ID")
  case "$r" in *"\"name\":\"n$i\""*) ;; *) echo "read $i on another instance missed the write" >&2 ;; esac
  echo "$w ${r##* }" >>"$tmp/raw"
done
sort -n -k2 "$tmp/raw" | awk -v n="$READS" '{r[NR]=$2*1000} END{printf "read after write on another instance (%d): p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", n, r[int(n*0.5)+1], r[int(n*0.99)+1], r[n]}'
sort -n -k1 "$tmp/raw" | awk -v n="$READS" '{w[NR]=$1*1000} END{printf "  the writes themselves: p50 %.1f ms, p99 %.1f ms\n", w[int(n*0.5)+1], w[int(n*0.99)+1]}'
