#!/usr/bin/env bash
# Prints the path of libchdb.so, a current ClickHouse (26.7) as an in-process
# library, downloading it first when it is not cached. The tests use it to
# run the ClickHouse projection's suite on current ClickHouse as well as on
# the 18.16 server CI installs from Debian (internal/testsupport/chdb, `make test`).
#
#   lib=$(scripts/chdb-lib.sh) && LINKD_TEST_CHDB=$lib go test ./projections/clickhouse/
#
# The library comes from the npm registry (@chdb/lib-linux-x64-gnu, 178 MB
# packed, 566 MB unpacked), checked against the registry's SHA-1 of this
# version, into $LINKD_CHDB_DIR (default ~/.cache/linkd/chdb-<version>).
# Exits 1, with the reason on standard error, when it cannot be had (another
# platform, no network): callers skip the tests that need it.
set -euo pipefail

version=26.7.3-stable.1
sha1=d2905fafd0e0ac0e231cccadd1f0f6d010977297
url=https://registry.npmjs.org/@chdb/lib-linux-x64-gnu/-/lib-linux-x64-gnu-$version.tgz
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
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/download.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log "downloading $url"
if command -v curl >/dev/null 2>&1; then
	curl -sSf --retry 2 --connect-timeout 20 --max-time 300 -o "$tmp/chdb.tgz" "$url" || { log "download failed"; exit 1; }
elif command -v wget >/dev/null 2>&1; then
	wget -q --tries=2 --timeout=60 -O "$tmp/chdb.tgz" "$url" || { log "download failed"; exit 1; }
else
	log "neither curl nor wget is installed"
	exit 1
fi
got=$(sha1sum "$tmp/chdb.tgz" | cut -d' ' -f1)
if [[ $got != "$sha1" ]]; then
	log "checksum mismatch: got $got, want $sha1"
	exit 1
fi
tar -xzf "$tmp/chdb.tgz" -C "$tmp" package/libchdb.so
mv "$tmp/package/libchdb.so" "$lib"
log "cached $lib"
echo "$lib"
