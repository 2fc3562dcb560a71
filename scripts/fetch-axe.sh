#!/bin/sh
# Fetches axe-core (MPL-2.0) for the dashboard's accessibility test
# (tests/browser/dashboard_test.go) into a cache outside the tree: nothing of
# it is committed. The test reads $LINKD_AXE, else this cache, and skips its
# accessibility check with a message when neither is there.
set -eu
version=4.11.1
dir=${LINKD_AXE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/linkd/axe}
mkdir -p "$dir"
cd "$dir"
if [ ! -f "axe-core-$version/axe.min.js" ]; then
	npm pack "axe-core@$version" >/dev/null
	mkdir -p "axe-core-$version"
	tar -xzf "axe-core-$version.tgz" -C "axe-core-$version" --strip-components=1 package/axe.min.js package/LICENSE
fi
echo "$dir/axe-core-$version/axe.min.js"
