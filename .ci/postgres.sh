#!/usr/bin/env bash
# A PostgreSQL server for the postgres backend's tests (backends/pgstore and
# the end-to-end scripts that run on it), on 127.0.0.1 only:
#
#   .ci/postgres.sh start    install Debian's postgresql when missing (as
#                            root), make a cluster in a temporary folder and
#                            start it on a free port; a no-op when it runs
#   .ci/postgres.sh env      print the environment for `eval "$(… env)"`:
#                            BULWARK_TEST_POSTGRES_URL
#   .ci/postgres.sh stop     stop it and remove its folder
#   .ci/postgres.sh status   say whether it runs
#
# The server refuses to run as root: as root, the folder is given to the
# postgres user (the package makes it) and the server runs as it. Trust
# authentication for user bulwark, on loopback and a socket in the folder,
# nothing else. The folder is $BULWARK_POSTGRES_DIR (default: under $TMPDIR,
# named after this checkout), so two checkouts never share a server.
# Without this script the tests start a throwaway server of their own
# (backends/pgstore/pgtest), or skip saying how to get one.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${BULWARK_POSTGRES_DIR:-${TMPDIR:-/tmp}/bulwark-postgres-$(printf %s "$repo" | cksum | cut -d' ' -f1)}
data="$dir/data"
envfile="$dir/env"

say() { echo "postgres: $*" >&2; }
die() { say "$*"; exit 1; }

bindir() {
  local d
  if [ -n "${BULWARK_TEST_POSTGRES_BIN:-}" ]; then echo "$BULWARK_TEST_POSTGRES_BIN"; return; fi
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n | tail -1)
  if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
  command -v initdb >/dev/null && dirname "$(command -v initdb)" && return
  return 1
}

# as CMD…: run as the server's user (postgres when we are root).
as() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

running() { [ -f "$envfile" ] && [ -f "$data/postmaster.pid" ] && as "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000))
}

cmd=${1:-}
bin=$(bindir || true)
case "$cmd" in
start)
  if [ -z "$bin" ]; then
    [ "$(id -u)" = 0 ] || die "PostgreSQL is not installed: apt-get install -y postgresql (as root), or set BULWARK_TEST_POSTGRES_URL"
    say "installing postgresql (Debian)"
    apt-get update -qq
    apt-get install -y -qq postgresql >/dev/null
    bin=$(bindir) || die "postgresql installed, but no initdb found"
  fi
  if running; then say "already running"; exit 0; fi
  rm -rf "$dir"
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
  as "$bin/initdb" -D "$data" -A trust -U bulwark -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; die "initdb failed"; }
  port=$(free_port)
  as "$bin/pg_ctl" -D "$data" -l "$dir/log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200" start >/dev/null ||
    { cat "$dir/log" >&2; die "the server did not start"; }
  echo "export BULWARK_TEST_POSTGRES_URL='postgres://bulwark@127.0.0.1:$port/postgres?sslmode=disable'" >"$envfile"
  say "running on 127.0.0.1:$port ($("$bin/postgres" --version)), data in $data"
  ;;
env)
  running || die "not running: .ci/postgres.sh start"
  cat "$envfile"
  ;;
stop)
  if [ -n "$bin" ] && [ -f "$data/postmaster.pid" ]; then
    as "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  ;;
status)
  if [ -n "$bin" ] && running; then echo "running: $(cat "$envfile")"; else echo "not running"; exit 1; fi
  ;;
*)
  echo "usage: $0 start|env|stop|status" >&2
  exit 2
  ;;
esac
