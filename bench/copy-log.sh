#!/usr/bin/env bash
# linkd copy-log from the embedded store into PostgreSQL, beside linkd
# replay of the copy in the same run (the baseline: the same events read
# back and applied). Usage: bench/copy-log.sh SERVER_DSN [clicks]
# SERVER_DSN names a PostgreSQL server and a database to connect to, such
# as 'postgres://postgres@/postgres?host=/tmp&port=5432'; the script makes
# a database of its own there (psql), and drops it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
SERVER=${1:?usage: bench/copy-log.sh SERVER_DSN [clicks]}
CLICKS=${2:-1000000}
tmp=$(mktemp -d)
db=linkd_copy_bench_$$
dsn=$(echo "$SERVER" | sed -E "s#/[A-Za-z0-9_]*(\?|\$)#/$db\1#")
trap 'psql "$SERVER" -qc "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
go build -o "$tmp/linkd" ./cmd/linkd
psql "$SERVER" -qc "CREATE DATABASE $db" >/dev/null
export LINKD_DATA_DIR=$tmp/data LINKD_LOG_LEVEL=warn
"$tmp/linkd" generate --links 1000 --clicks "$CLICKS" | tail -1
"$tmp/linkd" copy-log --to "$dsn"
LINKD_EVENTSTORE=$dsn "$tmp/linkd" replay
