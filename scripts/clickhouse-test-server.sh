#!/usr/bin/env bash
# A throw-away ClickHouse server for linkd's integration tests and CI.
#
#   eval "$(scripts/clickhouse-test-server.sh)"        # start (or reuse) it, export the DSN
#   go test ./projections/clickhouse/...
#   scripts/clickhouse-test-server.sh stop             # stop it, remove its data
#   scripts/clickhouse-test-server.sh status           # exit 0 when it answers
#
# It installs Debian's clickhouse-server and clickhouse-client when they are
# missing (apt-get as root, or through sudo -n), writes a minimal config into
# a state directory, picks free ports, starts the server in the background,
# waits for /ping and prints, on standard output, shell lines to eval:
#
#   export LINKD_TEST_CLICKHOUSE_DSN=clickhouse://default:@127.0.0.1:<port>/linkd_test
#   export LINKD_TEST_CLICKHOUSE_HTTP=http://127.0.0.1:<port>/
#
# Everything else goes to standard error. Running it again while the server
# is up prints the same lines and starts nothing. The state directory is
# $LINKD_CLICKHOUSE_TEST_DIR, default ${TMPDIR:-/tmp}/linkd-clickhouse-test.
# The configuration comes from internal/testsupport/chtest (config.xml.tmpl, users.xml),
# which the Go tests use as well when they start a server themselves.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
tmpl_dir="$root/internal/testsupport/chtest"
state=${LINKD_CLICKHOUSE_TEST_DIR:-${TMPDIR:-/tmp}/linkd-clickhouse-test}
server_bin=${CLICKHOUSE_SERVER_BIN:-/usr/sbin/clickhouse-server}
database=linkd_test

log() { printf 'clickhouse-test-server: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# ping PORT: true when the HTTP interface on PORT answers "Ok.".
ping_http() {
	local port=$1 resp
	if command -v curl >/dev/null 2>&1; then
		resp=$(curl -sf --max-time 2 "http://127.0.0.1:$port/ping" 2>/dev/null) || return 1
	else
		resp=$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && printf 'GET /ping HTTP/1.0\r\n\r\n' >&3 && cat <&3" 2>/dev/null) || return 1
	fi
	[[ $resp == *Ok.* ]]
}

# port_free PORT: true when nothing accepts connections on 127.0.0.1:PORT.
port_free() {
	! timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# free_port: prints a port in 20000-59999 that nothing listens on.
free_port() {
	local p i
	for i in $(seq 1 100); do
		p=$((20000 + RANDOM % 40000))
		if port_free "$p"; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

pid_alive() { [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null; }

print_env() {
	local tcp http pid
	tcp=$(cat "$state/tcp_port") http=$(cat "$state/http_port") pid=$(cat "$state/server.pid")
	printf 'export LINKD_TEST_CLICKHOUSE_DSN=clickhouse://default:@127.0.0.1:%s/%s\n' "$tcp" "$database"
	printf 'export LINKD_TEST_CLICKHOUSE_HTTP=http://127.0.0.1:%s/\n' "$http"
	printf '# ClickHouse test server: pid %s, data in %s\n' "$pid" "$state"
	printf '# stop it with: %s stop   (or: kill %s)\n' "$here/clickhouse-test-server.sh" "$pid"
}

running() {
	[[ -f $state/server.pid && -f $state/http_port && -f $state/tcp_port ]] || return 1
	pid_alive "$(cat "$state/server.pid")" || return 1
	ping_http "$(cat "$state/http_port")"
}

install_server() {
	[[ -x $server_bin ]] && return 0
	local sudo=()
	if [[ $(id -u) -ne 0 ]]; then
		command -v sudo >/dev/null 2>&1 || die "$server_bin is missing and installing it needs root: apt-get install clickhouse-server clickhouse-client"
		sudo=(sudo -n)
	fi
	log "installing clickhouse-server and clickhouse-client (apt-get)"
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clickhouse-server clickhouse-client >&2
	[[ -x $server_bin ]] || die "apt-get did not install $server_bin"
}

stop_server() {
	if [[ -f $state/server.pid ]]; then
		local pid i
		pid=$(cat "$state/server.pid")
		if pid_alive "$pid"; then
			log "stopping pid $pid"
			kill -TERM "$pid" 2>/dev/null || true
			for i in $(seq 1 100); do
				pid_alive "$pid" || break
				sleep 0.1
			done
			if pid_alive "$pid"; then
				log "pid $pid ignored SIGTERM for 10 s; killing it"
				kill -KILL "$pid" 2>/dev/null || true
			fi
		fi
	fi
	rm -rf "$state"
}

start_server() {
	if running; then
		log "already running"
		print_env
		return 0
	fi
	install_server
	local attempt tcp http pid i
	for attempt in 1 2 3; do
		stop_server
		mkdir -p "$state"/{data,tmp,user_files,format_schemas,log}
		tcp=$(free_port) || die "no free port"
		http=$(free_port) || die "no free port"
		[[ $tcp != "$http" ]] || continue
		sed -e "s|@DIR@|$state|g" -e "s|@TCP_PORT@|$tcp|g" -e "s|@HTTP_PORT@|$http|g" \
			"$tmpl_dir/config.xml.tmpl" >"$state/config.xml"
		cp "$tmpl_dir/users.xml" "$state/users.xml"
		echo "$tcp" >"$state/tcp_port"
		echo "$http" >"$state/http_port"
		# setsid: the server leaves the caller's process group, so a CI
		# step that ends does not take it down by signal.
		setsid "$server_bin" --config-file="$state/config.xml" \
			>"$state/log/stdout.log" 2>&1 </dev/null &
		pid=$!
		echo "$pid" >"$state/server.pid"
		for i in $(seq 1 300); do
			if ping_http "$http"; then
				log "ready on tcp $tcp, http $http (pid $pid)"
				print_env
				return 0
			fi
			pid_alive "$pid" || break
			sleep 0.1
		done
		log "attempt $attempt failed; server log:"
		tail -n 20 "$state/log/clickhouse-server.err.log" "$state/log/stdout.log" >&2 2>/dev/null || true
	done
	stop_server
	die "could not start $server_bin"
}

case ${1:-start} in
start) start_server ;;
stop) stop_server ;;
status) running && print_env ;;
env) running && print_env || die "not running" ;;
*) die "usage: $0 [start|stop|status|env]" ;;
esac
