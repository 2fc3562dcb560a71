#!/usr/bin/env bash
# Server-side render time of the dashboard's pages on a store of CLICKS
# tracked clicks (default 10,000,000, over 10,000 links in one workspace,
# generated through the real write path like bench/sale.sh): each page is
# fetched RENDERS times (default 40) by a signed-in admin, one at a time,
# and its p50 and p95 printed, beside the same run's p95 of the /v1 call the
# page is mostly built from (its baseline: the page adds its own rendering
# and its other calls to it).
#
# Usage: bench/dashboard.sh [renders]
#   BENCH_DIR=dir keeps the generated store between runs (bench/sale.sh's
#   store can be reused: the same layout).
set -euo pipefail
cd "$(dirname "$0")/.."
RENDERS=${1:-40}
CLICKS=${CLICKS:-10000000}
source bench/lib.sh
tmp=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$tmp"
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; [ -n "${BENCH_DIR:-}" ] || rm -rf "$tmp"' EXIT
go build -o "$tmp/linkd" ./cmd/linkd
KEY=svc_sk_bench_operator_key_0123456789
PASS=bench-admin-password
ADDR=127.0.0.1:18195
export LINKD_DATA_DIR="$tmp/data" LINKD_ADDR=$ADDR LINKD_INITIAL_API_KEY=$KEY LINKD_LOG_LEVEL=warn \
  LINKD_INITIAL_ADMIN_PASSWORD=$PASS

if [ ! -s "$tmp/tids" ]; then
  echo "generating $CLICKS tracked clicks..."
  "$tmp/linkd" generate --links 10000 --workspaces 1 --clicks "$CLICKS" --tracking --tracking-ids-out "$tmp/tids"
fi
"$tmp/linkd" serve >"$tmp/linkd.log" 2>&1 &
for _ in $(seq 3000); do curl -sf "http://$ADDR/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
curl -sf "http://$ADDR/healthz" >/dev/null

jar="$tmp/cookies"
rm -f "$jar"
tok=$(curl -s -c "$jar" -b "$jar" "http://$ADDR/dashboard/login" | grep -o 'name="csrf_token" value="[^"]*"' | head -1 | sed 's/.*value="//; s/"$//')
code=$(curl -s -o /dev/null -w '%{http_code}' -c "$jar" -b "$jar" -H "Origin: http://$ADDR" \
  --data-urlencode "csrf_token=$tok" --data-urlencode "email=admin@localhost" --data-urlencode "password=$PASS" \
  "http://$ADDR/dashboard/login")
[ "$code" = 303 ] || { echo "sign-in answered $code"; exit 1; }

api() { curl -sf -H "Authorization: Bearer $KEY" "http://$ADDR$1"; }
ws=$(api /v1/workspaces | grep -o '"id":"[^"]*"' | head -1 | cut -d'"' -f4)
link=$(api "/v1/links?page_size=1" | grep -o '"id":"[^"]*"' | head -1 | cut -d'"' -f4)
project=$(api "/v1/projects?page_size=1" | { grep -o '"id":"[^"]*"' || true; } | head -1 | cut -d'"' -f4)
if [ -z "$project" ]; then
  project=$(curl -sf -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -d '{"name":"Site"}' "http://$ADDR/v1/projects" | grep -o '"id":"[^"]*"' | head -1 | cut -d'"' -f4)
fi
today=$(date -u +%F)
start=$(date -u -d '29 days ago' +%F)

# times path [auth]: RENDERS sequential fetches, prints "p50 p95" in ms.
times() {
  local path=$1 i
  for i in $(seq "$RENDERS"); do
    if [ "${2:-}" = key ]; then
      curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $KEY" "http://$ADDR$path"
    else
      curl -s -o /dev/null -w '%{time_total}\n' -b "$jar" "http://$ADDR$path"
    fi
  done | sort -n | awk '{a[NR]=$1*1000} END {printf "p50 %.1f ms, p95 %.1f ms", a[int(NR/2)+1], a[int(NR*0.95)]}'
}
row() { printf '%-40s %s   (baseline %s: %s)\n' "$1" "$(times "$1")" "$2" "$(times "$2" key)"; }
echo "$CLICKS clicks, $RENDERS renders each, one at a time"
row /dashboard/links "/v1/links?page_size=20"
row "/dashboard/links/$link" "/v1/stats/links/$link?start_date=$start&end_date=$today"
row "/dashboard/workspaces/$ws" "/v1/stats/workspaces/$ws?start_date=$start&end_date=$today"
row /dashboard/keys /v1/api-keys
row /dashboard/customers "/v1/customers?page_size=20"
row /dashboard/webhooks "/v1/webhooks?page_size=100"
row "/dashboard/radar/$project" "/v1/projects/$project"
