#!/usr/bin/env bash
# Side-by-side comparison of two revisions of linkd under the redirect load
# of bench/redirect.sh, for a machine whose speed drifts by tens of percent
# within minutes. Usage: bench/redirect-ab.sh REV_A REV_B [rounds] [seconds]
# A side may also be the path of a linkd binary instead of a revision.
#
# Both revisions and the bare server run at once, each on its own copy of
# one data directory (LINKS=1000 tracked links, created once through the
# API by REV_A). Each round loads the three in turn, the order rotating,
# for the given seconds each (wrk, 64 connections, the same Lua script as
# bench/redirect.sh), and prints each one's rps, CPU µs per request and
# p99, and each linkd's ratio to the bare server in that round. Adjacent
# windows share the machine's mood, so the per-round ratios and the CPU of
# A against B are what to compare; the last lines give their medians.
#
# PROFILE=DIR also takes a CPU profile of each linkd in every window
# (LINKD_DEBUG_ADDR), merges each side's into DIR/a.pprof and DIR/b.pprof,
# and prints the cumulative µs of CPU per redirect of the top functions of
# both: steps of a few percent, which the per-round CPU hides on a noisy
# machine, show there (docs/performance.md, "How to measure").
#
# BUILD_A / BUILD_B and ENV_A / ENV_B are environment assignments for one
# side's go build and linkd serve: BUILD_B=CGO_ENABLED=0 compares a build
# without cgo (the container image) with one with it,
# ENV_B=GOMEMLIMIT=600MiB a setting (docs/adr/0004-pebble-memory-without-cgo.md).
set -euo pipefail
cd "$(dirname "$0")/.."
REV_A=$1
REV_B=$2
ROUNDS=${3:-6}
SECS=${4:-5}
LINKS=${LINKS:-1000}
PROFILE=${PROFILE:-}
BUILD_A=${BUILD_A:-} BUILD_B=${BUILD_B:-} ENV_A=${ENV_A:-} ENV_B=${ENV_B:-}
source bench/lib.sh
tmp=$(mktemp -d)
pids=()
source bench/sides.sh
cleanup() {
  set +e # a killed server's wait fails; the rest must still run
  kill -9 "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" 2>/dev/null
  remove_sides
}
trap cleanup EXIT
build_side a "$REV_A" "$BUILD_A"
build_side b "$REV_B" "$BUILD_B"
go build -o "$tmp/bare" ./bench/bare

KEY=svc_sk_bench_operator_key_0123456789
echo "creating $LINKS links with $REV_A..."
LINKD_DATA_DIR="$tmp/data" LINKD_ADDR=127.0.0.1:18310 LINKD_INITIAL_API_KEY=$KEY LINKD_LOG_LEVEL=warn "$tmp/linkd-a" serve >/dev/null 2>&1 &
MK=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:18310/healthz >/dev/null && break; sleep 0.1; done
create_links 127.0.0.1:18310 "$KEY" "$LINKS"
kill $MK; wait $MK || true

# The click limit stays on as in bench/redirect.sh unless the rounds could
# reach it (4 user agents x LINKS visitor-links, about 60,000 requests/s).
if [ -z "${LINKD_CLICK_LIMIT+x}" ] && [ $((ROUNDS * SECS * 60000 / (4 * LINKS))) -ge 900 ]; then
  export LINKD_CLICK_LIMIT=0
fi
if [ -z "${LINKD_CLICK_LIMIT_NETWORK+x}" ] && [ $((ROUNDS * SECS * 60000 / LINKS)) -ge 9000 ]; then
  export LINKD_CLICK_LIMIT_NETWORK=0
fi
for side in a b; do
  cp -a "$tmp/data" "$tmp/data-$side"
  port=18311; [ $side = b ] && port=18312
  dbg=""; [ -n "$PROFILE" ] && dbg=127.0.0.1:$((port + 100))
  extra=$ENV_A; [ $side = b ] && extra=$ENV_B
  env $extra LINKD_DEBUG_ADDR=$dbg LINKD_DATA_DIR="$tmp/data-$side" LINKD_ADDR=127.0.0.1:$port LINKD_LOG_LEVEL=warn "$tmp/linkd-$side" serve >"$tmp/$side.log" 2>&1 &
  pids+=($!)
done
"$tmp/bare" -addr 127.0.0.1:18313 &
pids+=($!)
for port in 18311 18312; do
  for _ in $(seq 100); do curl -sf http://127.0.0.1:$port/healthz >/dev/null && break; sleep 0.1; done
done

# The load of bench/redirect.sh, its busy link off (BUSY=0).
sed -n '/^cat >"\$tmp\/load.lua" <<LUA$/,/^LUA$/p' bench/redirect.sh | sed '1d;$d' | sed -e "s/\$LINKS/$LINKS/" -e "s/\$BUSY/0/" >"$tmp/load.lua"
# run PID PORT [PROFILE_FILE]: "rps cpu_us p99_ms" of a window of SECS
# seconds; with a file, a CPU profile of linkd over the window's last
# SECS-1 seconds goes into it, and the requests of those seconds (a share
# of the window's) are added to the file's .n.
run() {
  local c0 c1 r
  if [ -n "${3:-}" ]; then
    curl -s -o "$3" "http://127.0.0.1:$(($2 + 100))/debug/pprof/profile?seconds=$((SECS - 1))" &
  fi
  c0=$(cpu "$1")
  r=$(wrk -t2 -c64 -d"${SECS}s" --latency -s "$tmp/load.lua" "http://127.0.0.1:$2" | grep RESULT)
  c1=$(cpu "$1")
  if [ -n "${3:-}" ]; then
    wait $! 2>/dev/null || true
    echo "$r" | sed -E 's/.*requests=([0-9]+).*/\1/' | awk -v s="$SECS" '{printf "%d\n", $1 * (s - 1) / s}' >"$3.n"
  fi
  echo "$(echo "$r" | sed -E 's/.*rps=([0-9]+).*/\1/') $(cpu_per_req $((c1 - c0)) "$r") $(echo "$r" | sed -E 's/.*p99_ms=([0-9.]+).*/\1/')"
}
# prof SIDE ROUND: the profile file of a window, when PROFILE is set.
prof() { [ -n "$PROFILE" ] && echo "$PROFILE/$1.$2.pprof"; }
[ -n "$PROFILE" ] && mkdir -p "$PROFILE" && rm -f "$PROFILE"/[ab].*.pprof "$PROFILE"/[ab].*.pprof.n
PA=${pids[0]}; PB=${pids[1]}; PC=${pids[2]}
for p in "$PA 18311" "$PB 18312" "$PC 18313"; do run $p >/dev/null; done # warm-up
echo "round: bare rps cpu p99 | A rps cpu p99 ratio | B rps cpu p99 ratio"
out=()
for i in $(seq "$ROUNDS"); do
  case $((i % 3)) in
  1) c=$(run $PC 18313); a=$(run $PA 18311 "$(prof a $i)"); b=$(run $PB 18312 "$(prof b $i)") ;;
  2) a=$(run $PA 18311 "$(prof a $i)"); b=$(run $PB 18312 "$(prof b $i)"); c=$(run $PC 18313) ;;
  0) b=$(run $PB 18312 "$(prof b $i)"); c=$(run $PC 18313); a=$(run $PA 18311 "$(prof a $i)") ;;
  esac
  line=$(echo "$c $a $b" | awk '{printf "%d %.1f %.1f | %d %.1f %.1f %.3f | %d %.1f %.1f %.3f | B/A cpu %.3f", $1,$2,$3, $4,$5,$6,$4/$1, $7,$8,$9,$7/$1, $8/$5}')
  echo "$i: $line"
  out+=("$line")
done
echo "median ratio A ($REV_A) = $(printf '%s\n' "${out[@]}" | awk -F'|' '{split($2,x," "); print x[4]}' | median)"
echo "median ratio B ($REV_B) = $(printf '%s\n' "${out[@]}" | awk -F'|' '{split($3,x," "); print x[4]}' | median)"
echo "median CPU per request B/A = $(printf '%s\n' "${out[@]}" | awk '{print $NF}' | median)"
[ -z "$PROFILE" ] && exit 0

# The profiles of each side's windows merged, and where the two differ, in
# µs of CPU per redirect: steps of a few percent, which the per-round CPU
# above (±15% from round to round here) hides, show there.
for side in a b; do
  go tool pprof -proto "$PROFILE"/$side.*.pprof >"$PROFILE/$side.pprof" 2>/dev/null
  cat "$PROFILE"/$side.*.pprof.n | awk '{s += $1} END {print s}' >"$PROFILE/$side.n"
done
NA=$(cat "$PROFILE/a.n"); NB=$(cat "$PROFILE/b.n")
# total FILE N: µs of CPU per redirect in a merged profile.
total() {
  go tool pprof -top -nodecount=1 "$1" 2>/dev/null | grep -oE 'Total samples = [0-9.]+m?s' |
    awk -v n="$2" '{v = $4; if (v ~ /ms$/) { sub(/ms/, "", v); v /= 1000 } else sub(/s/, "", v); printf "%.1f", v * 1e6 / n}'
}
echo "merged profiles ($PROFILE/a.pprof, b.pprof): A $(total "$PROFILE/a.pprof" "$NA") µs per redirect ($NA redirects), B $(total "$PROFILE/b.pprof" "$NB") µs ($NB)"
# perreq FILE N: "function µs" of cumulative CPU per redirect, top 60.
perreq() {
  go tool pprof -top -cum -nodecount=60 "$1" 2>/dev/null |
    awk -v n="$2" 'NR > 6 && NF >= 6 && $4 ~ /^[0-9.]+m?s$/ { c = $4
      if (c ~ /ms$/) { sub(/ms/, "", c); c /= 1000 } else sub(/s/, "", c)
      printf "%s %.2f\n", $6, c * 1e6 / n }'
}
echo "cumulative µs per redirect, A then B, of the functions at the top of either:"
perreq "$PROFILE/a.pprof" "$NA" >"$PROFILE/a.cum"
perreq "$PROFILE/b.pprof" "$NB" >"$PROFILE/b.cum"
awk 'NR == FNR { a[$1] = $2; order[++n] = $1; next } { b[$1] = $2; if (!($1 in a)) order[++n] = $1 }
  END { for (i = 1; i <= n; i++) { f = order[i]; printf "%7.2f %7.2f  %s\n", a[f] + 0, b[f] + 0, f } }' \
  "$PROFILE/a.cum" "$PROFILE/b.cum" | head -40
