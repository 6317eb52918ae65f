# Shared by the wrk-driven benches (source it from the repository's root):
# installs what they need, then one measured run and a ratio. DURATION must
# be set before wrk_run is called.

command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

# wrk_run NAME KEY CONNECTIONS URL [LUA_SCRIPT]: runs wrk (2 threads, or 1
# for one connection) for DURATION seconds with the key as a bearer token,
# prints the figures on stderr and "RPS P50" on stdout. wrk prints
# "Requests/sec: N" and, with --latency, "50%" and "99%" lines.
wrk_run() {
  local out rps p50 p99 errors
  out=$(wrk -t$(( $3 < 2 ? $3 : 2 )) -c$3 -d${DURATION}s --latency -H "Authorization: Bearer $2" ${5:+-s "$5"} "$4")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  errors=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  printf '%-40s %10s req/s  p50 %8s  p99 %8s  non-2xx %s\n' "$1" "$rps" "$p50" "$p99" "${errors:-0}" >&2
  echo "$rps $p50"
}

ratio() { python3 -c "import sys; print(f'{float(sys.argv[1])/float(sys.argv[2]):.3f}')" "$1" "$2"; }
