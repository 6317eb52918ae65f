# Shared by the benches that need a libSQL server primary (source it from
# the repository's root after bench/wrk.sh): a temp folder whose processes
# are stopped by pid on exit, free loopback ports, and a real sqld
# (tests/sqld/ensure.py installs it) listening on one of them.
#
# After `start_primary`: PRIMARY is its base URL, TMP the temp folder;
# `remember_pid PID` adds a process to stop at exit.

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
TMP=$(mktemp -d)
trap 'kill $(cat "$TMP/pids" 2>/dev/null) 2>/dev/null; sleep 0.5; rm -rf "$TMP"' EXIT
remember_pid() { echo "$1" >> "$TMP/pids"; }

start_primary() {
  local sqld port
  sqld=$(python3 tests/sqld/ensure.py)
  port=$(free_port)
  "$sqld" --no-welcome --db-path "$TMP/primary" --http-listen-addr 127.0.0.1:$port >/dev/null 2>&1 &
  remember_pid $!
  PRIMARY=http://127.0.0.1:$port
  for _ in $(seq 1 100); do curl -sf $PRIMARY/health >/dev/null && break; sleep 0.1; done
}
