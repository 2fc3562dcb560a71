#!/usr/bin/env bash
# Prints the path of libchdb.so, a current ClickHouse (26.7) as an in-process
# library, downloading it first when it is not cached. The tests use it to
# run the ClickHouse projection's suite on current ClickHouse as well as on
# the 18.16 server CI installs from Debian (internal/testsupport/chdb, `make test`).
#
#   lib=$(scripts/chdb-lib.sh) && LINKD_TEST_CHDB=$lib go test ./projections/clickhouse/...
#
# The library is the npm package @chdb/lib-linux-x64-gnu (178 MB packed,
# 566 MB unpacked), fetched with `npm pack`, so the machine's npm settings
# (registry, proxy, certificates in .npmrc or npm_config_*) apply; npm checks
# the package's integrity and this script its SHA-1 for this version. Only
# libchdb.so is kept, in $LINKD_CHDB_DIR (default
# ~/.cache/linkd/chdb-<version>); npm's own cache is a temporary directory,
# so the 178 MB are not kept twice. Exits 1, with the reason on standard
# error, when it cannot be had (another platform, no npm, no network):
# callers skip the tests that need it.
set -euo pipefail

version=26.7.3-stable.1
sha1=d2905fafd0e0ac0e231cccadd1f0f6d010977297
pkg=@chdb/lib-linux-x64-gnu
dir=${LINKD_CHDB_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/linkd/chdb-$version}
lib=$dir/libchdb.so

log() { printf 'chdb-lib: %s\n' "$*" >&2; }

if [[ -f $lib ]]; then
	echo "$lib"
	exit 0
fi
if [[ $(uname -s) != Linux || $(uname -m) != x86_64 ]]; then
	log "libchdb.so is packaged here for linux x86_64 only"
	exit 1
fi
if ! command -v npm >/dev/null 2>&1; then
	log "npm is not installed: it fetches $pkg"
	exit 1
fi
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/download.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log "fetching $pkg@$version with npm pack (178 MB)"
if ! tgz=$(cd "$tmp" && npm pack --loglevel=error --logs-max=0 --cache "$tmp/npm-cache" "$pkg@$version" 2>"$tmp/npm.log"); then
	log "npm pack failed: $(head -n 2 "$tmp/npm.log" | tr "\n" " ")"
	exit 1
fi
tgz=$(printf '%s\n' "$tgz" | tail -n 1)
mv "$tmp/$tgz" "$tmp/chdb.tgz"
got=$(sha1sum "$tmp/chdb.tgz" | cut -d' ' -f1)
if [[ $got != "$sha1" ]]; then
	log "checksum mismatch: got $got, want $sha1"
	exit 1
fi
tar -xzf "$tmp/chdb.tgz" -C "$tmp" package/libchdb.so
mv "$tmp/package/libchdb.so" "$lib"
log "cached $lib"
echo "$lib"
