# Shared by the load scripts of bench/ (sourced, not run).

command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }

# cpu PID: user+system clock ticks the process has used so far.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# cpu_named NAME...: user+system clock ticks used so far by every running
# process of these names (0 when there is none).
cpu_named() { local t=0 n p; for n in "$@"; do for p in $(pgrep -x "$n"); do
  t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done; done; echo "$t"; }

# cpu_per_req TICKS WRK_LINE: CPU µs per request of a server that used
# TICKS clock ticks during a wrk run whose summary line has requests=N.
cpu_per_req() {
  awk -v t="$1" -v h="$(getconf CLK_TCK)" -v n="$(echo "$2" | sed -E 's/.*requests=([0-9]+).*/\1/')" \
    'BEGIN{printf "%.1f", t / h * 1e6 / n}'
}

# create_links ADDR KEY N: N tracked links b0..b(N-1) through the API, four
# requests at a time as API clients make them, a hundred per curl process
# (one process per link took four minutes for 10,000 here: starting curl
# costs more than the request). Fails unless every one is created.
create_links() {
  seq 0 $(($3 - 1)) | xargs -P 4 -n 100 bash -c '
    addr=$1 key=$2; shift 2; args=()
    for i; do
      args+=(--next -sf -o /dev/null -X POST "http://$addr/v1/links" -H "Authorization: Bearer $key"
        -H "Content-Type: application/json"
        -d "{\"original_url\":\"https://example.com/landing/$i\",\"custom_code\":\"b$i\",\"utm_source\":\"bench\",\"enable_conversion_tracking\":true}")
    done
    curl --fail-early "${args[@]:1}"' _ "$1" "$2"
}
