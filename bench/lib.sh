# Shared by the load scripts of bench/ (sourced, not run).

command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }

# cpu PID: user+system clock ticks the process has used so far.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# cpu_per_req TICKS WRK_LINE: CPU µs per request of a server that used
# TICKS clock ticks during a wrk run whose summary line has requests=N.
cpu_per_req() {
  awk -v t="$1" -v h="$(getconf CLK_TCK)" -v n="$(echo "$2" | sed -E 's/.*requests=([0-9]+).*/\1/')" \
    'BEGIN{printf "%.1f", t / h * 1e6 / n}'
}
