#!/usr/bin/env bash
# Side-by-side replay of one projection by two revisions of linkd, for a
# machine whose speed drifts by tens of percent within minutes.
# Usage: bench/replay-ab.sh REV_A REV_B [rounds] [projection]
#
# REV_A generates one store (CLICKS clicks, default 1,000,000, over 10,000
# links of 200 workspaces, 30 days: the store of docs/performance.md's
# replay row); each side replays its own copy of it, alternated, the order
# rotating each round. Each run prints the rate linkd reports (events over
# the replay's time) and the whole process's wall and CPU time: open,
# replay and close, where the last deltas waiting are written. The CPU
# seconds move less than the rates on a noisy machine; the last lines give
# each side's medians. A revision may be a path to a binary instead;
# ENV_A / ENV_B are environment assignments for one side's replays.
set -euo pipefail
cd "$(dirname "$0")/.."
REV_A=$1
REV_B=$2
ROUNDS=${3:-4}
PROJ=${4:-analytics}
CLICKS=${CLICKS:-1000000}
ENV_A=${ENV_A:-} ENV_B=${ENV_B:-}
tmp=$(mktemp -d)
source bench/sides.sh
cleanup() {
  set +e
  remove_sides
}
trap cleanup EXIT
build_side a "$REV_A"
build_side b "$REV_B"
echo "generating $CLICKS clicks with $REV_A..."
"$tmp/linkd-a" generate --data-dir "$tmp/data" --links 10000 --workspaces 200 --clicks "$CLICKS" >/dev/null 2>&1
for side in a b; do cp -a "$tmp/data" "$tmp/data-$side"; done

# run SIDE: one replay; prints "rate wall cpu".
run() {
  local t0 t1 out extra=$ENV_A
  [ "$1" = b ] && extra=$ENV_B
  t0=$(date +%s.%N)
  out=$(env $extra /usr/bin/time -f '%U %S' "$tmp/linkd-$1" replay --data-dir "$tmp/data-$1" --projection "$PROJ" 2>&1)
  t1=$(date +%s.%N)
  echo "$out" | awk -v t0="$t0" -v t1="$t1" '
    /events\/s/ { gsub(/[()]/, "", $(NF-1)); rate = $(NF-1) }
    NF == 2 && $1 ~ /^[0-9.]+$/ { cpu = $1 + $2 }
    END { printf "%s %.2f %.2f\n", rate, t1 - t0, cpu }'
}
: >"$tmp/a.txt"
: >"$tmp/b.txt"
for r in $(seq "$ROUNDS"); do
  order="a b"; [ $((r % 2)) = 0 ] && order="b a"
  for side in $order; do
    res=$(run $side)
    echo "$res" >>"$tmp/$side.txt"
    read -r rate wall cpu <<<"$res"
    echo "round $r $side: $rate events/s reported, whole process ${wall} s wall, ${cpu} s CPU (load $(cut -d' ' -f1 /proc/loadavg))"
  done
done
for side in a b; do
  rev=$REV_A; [ $side = b ] && rev=$REV_B
  echo "median $side ($rev): $(cut -d' ' -f1 "$tmp/$side.txt" | median) events/s reported," \
    "$(cut -d' ' -f2 "$tmp/$side.txt" | median) s wall, $(cut -d' ' -f3 "$tmp/$side.txt" | median) s CPU"
done
