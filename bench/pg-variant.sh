#!/usr/bin/env bash
# Upper bounds of the PostgreSQL server's part of a redirect: bench/redirect.sh
# with the log in PostgreSQL, on the schema linkd creates, alternated round by
# round with the same schema altered by one SQL file of bench/pg-variants
# (each says what it changes; most are unsafe, for measurement only). Every
# round starts on a fresh database, prepared by bench/pgvariant before linkd
# starts. Usage:
#   bench/pg-variant.sh 'postgres://postgres@/postgres?host=/tmp&port=PORT' FILE.sql [rounds] [seconds]
# FILE may list several files, comma-separated, applied in order.
# The connection string names any database of the server (the variant's own,
# linkd_variant, is dropped and created from it). LINKD_BIN measures that
# binary instead of building this tree; bench/redirect.sh's other settings
# (LINKS, CONNS) pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
SERVER=${1:?connection string of the PostgreSQL server}
SQL=${2:?SQL file of bench/pg-variants}
ROUNDS=${3:-3}
DUR=${4:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/pgvariant" ./bench/pgvariant
if [ -z "${LINKD_BIN:-}" ]; then go build -o "$tmp/linkd" ./cmd/linkd; export LINKD_BIN=$tmp/linkd; fi
field() { echo "$1" | grep -o "$2[^ ,]*" | head -1; }
for round in $(seq "$ROUNDS"); do
  for side in unaltered variant; do
    args=(-url "$SERVER"); [ "$side" = variant ] && args+=(-sql "$SQL")
    store=$("$tmp/pgvariant" "${args[@]}")
    out=$(LINKD_EVENTSTORE=$store ROUNDS=1 bench/redirect.sh "$DUR" "${CONNS:-64}" 2>&1) || { echo "$out" >&2; exit 1; }
    line=$(echo "$out" | grep '^linkd /')
    echo "round $round $side: $(field "$out" 'ratio linkd/bare = ') $(field "$line" 'rps=') linkd_$(field "$line" ' cpu_us_per_req=' | tr -d ' ') $(field "$line" 'postgres_cpu_us_per_req=') $(echo "$out" | grep '^redirects answered')"
  done
done
