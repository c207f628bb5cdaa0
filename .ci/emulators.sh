#!/usr/bin/env bash
# The AWS emulators the aws provider's integration tests run against, on
# loopback only:
#   S3        a gofakes3 server (plugins/aws/internal/fakes3), built with go
#   DynamoDB  dynalite, installed with `npm ci --ignore-scripts` from
#             .ci/package.json + .ci/package-lock.json into .ci/node_modules
#
#   .ci/emulators.sh start    install, build, start both on free ports, wait
#                             until they answer; a no-op when they already run
#   .ci/emulators.sh env      print the environment for `eval "$(… env)"`
#   .ci/emulators.sh stop     stop both (by their pid files), each with
#                             every process of its process group
#   .ci/emulators.sh status   say whether they run
#   .ci/emulators.sh selftest start and stop them in a scratch folder and
#                             fail if a process of theirs is left, or if a
#                             stale pid file (its process gone, or not
#                             ours) stops a start or gets a process killed
#
# Each emulator runs in a session and process group of its own (setsid),
# whose id is the pid in its pid file: stop signals the whole group, so no
# child a wrapper (npm, npx, a node version manager's shim) started stays
# behind when the wrapper goes, and nothing of the caller's group is hit.
#
# The pid files, logs, the built server and the env file live in
# $BULWARK_EMULATORS_DIR (default: a folder under $TMPDIR named after this
# checkout), so two checkouts never share emulators.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
ci="$repo/.ci"
state=${BULWARK_EMULATORS_DIR:-${TMPDIR:-/tmp}/bulwark-emulators-$(printf %s "$repo" | cksum | cut -d' ' -f1)}
envfile="$state/env"
ready_timeout=${BULWARK_EMULATORS_TIMEOUT:-30} # seconds

say() { echo "emulators: $*" >&2; }
die() { say "$*"; exit 1; }

# alive NAME PAT: the pid in NAME.pid runs, and is the program we started
# (its command line has PAT: a recycled pid is not ours).
alive() {
  local f="$state/$1.pid" pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  grep -qa "$2" "/proc/$pid/cmdline" 2>/dev/null || return 1
}

# members PGID PAT: the pids of the processes of process group PGID whose
# command line has PAT (ours: a group id a stranger took since has none).
members() {
  local p
  for p in $(ps -eo pid=,pgid= | awk -v g="$1" '$2 == g { print $1 }'); do
    grep -qa -- "$2" "/proc/$p/cmdline" 2>/dev/null && echo "$p"
  done
  return 0
}

# spawn NAME LOG CMD...: run CMD in the background in a session and process
# group of its own, its pid (the group's id) in NAME.pid once it runs.
# setsid forks when called as a group leader; the pid written is then the
# forked child's, from inside, which exec keeps.
spawn() {
  local name=$1 log=$2 deadline
  shift 2
  rm -f "$state/$name.pid" "$state/$name.pid.tmp"
  setsid sh -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$state/$name.pid" "$@" \
    </dev/null >"$log" 2>&1 &
  deadline=$((SECONDS + 10))
  until [ -s "$state/$name.pid" ]; do
    [ $SECONDS -lt $deadline ] || die "$name: no pid after 10 s (see $log)"
    sleep 0.05
  done
}

# probe URL [BODY TARGET [EXPECT]]: 0 when an HTTP server at URL answers (a
# POST of BODY with x-amz-target TARGET when given) and, with EXPECT, the
# answer contains it: proof it is the server we started, not one that took
# the port first. curl when there is one (it starts faster than node).
probe() {
  local out
  if command -v curl >/dev/null; then
    if [ -n "${2:-}" ]; then
      out=$(curl -s --max-time 1 -X POST -H "x-amz-target: $3" \
        -H 'content-type: application/x-amz-json-1.0' --data "$2" "$1") || return 1
    else
      out=$(curl -s --max-time 1 "$1") || return 1
    fi
  else
    out=$(node -e '
      const [url, body, target] = process.argv.slice(1);
      const req = require("http").request(url, {
        method: body ? "POST" : "GET", timeout: 1000,
        headers: target ? {"x-amz-target": target, "content-type": "application/x-amz-json-1.0"} : {},
      }, res => { let b = ""; res.on("data", d => b += d); res.on("end", () => { process.stdout.write(b); process.exit(0); }); });
      req.on("error", () => process.exit(1));
      req.on("timeout", () => { req.destroy(); process.exit(1); });
      req.end(body || undefined);
    ' "$1" "${2:-}" "${3:-}") || return 1
  fi
  [ -z "${4:-}" ] || [[ "$out" == *"$4"* ]]
}

# free_port: a port nothing listens on now (dynalite takes a fixed port).
free_port() {
  node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

install_dynalite() {
  command -v node >/dev/null || die "node is needed for dynalite (apt-get install nodejs npm)"
  command -v npm >/dev/null || die "npm is needed to install dynalite (apt-get install npm)"
  node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' ||
    die "dynalite 4.0.0 needs node >= 20, this is $(node --version)"
  # Reinstall when the lock changed since the last install.
  if [ -f "$ci/node_modules/dynalite/cli.js" ] && [ -f "$ci/node_modules/.package-lock.json" ] &&
     [ ! "$ci/package-lock.json" -nt "$ci/node_modules/.package-lock.json" ]; then
    return
  fi
  say "npm ci (dynalite) in .ci"
  local t0=$SECONDS
  (cd "$ci" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
  say "installed in $((SECONDS - t0)) s"
}

build_fakes3() {
  command -v go >/dev/null || die "go is needed to build the S3 emulator"
  (cd "$repo/plugins/aws" && go build -o "$state/fakes3" ./internal/fakes3)
}

# start_dynalite: start dynalite in memory on a free port (sets port).
start_dynalite() {
  port=$(free_port)
  # A retry: what is left of the last try goes first.
  stop_one dynamodb dynalite quiet
  spawn dynamodb "$state/dynamodb.log" node "$ci/node_modules/dynalite/cli.js" --host 127.0.0.1 --port "$port" \
    --createTableMs 0 --deleteTableMs 0 --updateTableMs 0
}

start() {
  mkdir -p "$state"
  if alive s3 fakes3 && alive dynamodb dynalite && [ -f "$envfile" ]; then
    say "already running ($state)"
    return
  fi
  stop_all quiet
  install_dynalite
  build_fakes3

  local t0 s3url="" ddburl="" deadline
  port=
  t0=$(date +%s.%N)
  rm -f "$state/s3.addr"
  # Port 0: fakes3 takes a free port and writes its URL once listening.
  spawn s3 "$state/s3.log" "$state/fakes3" -listen 127.0.0.1:0 -addr-file "$state/s3.addr"

  start_dynalite
  ddburl="http://127.0.0.1:$port"

  deadline=$((SECONDS + ready_timeout))
  local s3ok="" ddbok="" tries=1
  while [ -z "$s3ok" ] || [ -z "$ddbok" ]; do
    if [ $SECONDS -ge $deadline ]; then
      say "not ready after ${ready_timeout} s; logs:"
      tail -n 20 "$state/s3.log" "$state/dynamodb.log" >&2 || true
      stop_all quiet
      exit 1
    fi
    alive s3 fakes3 || { tail -n 20 "$state/s3.log" >&2; stop_all quiet; die "the S3 emulator exited"; }
    if ! alive dynamodb dynalite; then
      # Its port may have been taken between free_port and the bind: try
      # another, twice.
      if [ $tries -lt 3 ] && [ -z "$ddbok" ]; then
        tries=$((tries + 1))
        start_dynalite
        ddburl="http://127.0.0.1:$port"
        continue
      fi
      tail -n 20 "$state/dynamodb.log" >&2
      stop_all quiet
      die "dynalite exited"
    fi
    if [ -z "$s3ok" ] && [ -s "$state/s3.addr" ]; then
      s3url=$(cat "$state/s3.addr")
      probe "$s3url/" && s3ok=1
    fi
    if [ -z "$ddbok" ]; then
      # Unsigned, dynalite answers with a DynamoDB error: its __type.
      probe "$ddburl/" '{}' DynamoDB_20120810.ListTables '"__type"' && ddbok=1
    fi
    [ -n "$s3ok" ] && [ -n "$ddbok" ] || sleep 0.1
  done
  alive s3 fakes3 && alive dynamodb dynalite || { stop_all quiet; die "an emulator exited right after it answered"; }

  cat >"$envfile.tmp" <<EOF
export BULWARK_TEST_S3_ENDPOINT=$s3url
export BULWARK_TEST_DYNAMODB_ENDPOINT=$ddburl
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export AWS_REGION=us-east-1
EOF
  mv "$envfile.tmp" "$envfile"
  say "S3 $s3url, DynamoDB $ddburl: ready in $(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $t0 }") s"
}

# stop_one NAME PAT [quiet]: TERM the process group NAME.pid names, KILL
# what is left of it (any process) after 5 s; only when a process of that
# group is ours
# (has PAT in its command line), so a stale pid file, its process gone or
# the id taken by a stranger since, only goes. Then remove the pid file.
stop_one() {
  local name=$1 pat=$2 f="$state/$1.pid" pid n left
  if [ -f "$f" ]; then
    pid=$(cat "$f")
    if [[ "$pid" =~ ^[0-9]+$ ]] && [ -n "$(members "$pid" "$pat")" ]; then
      # The group is ours: every process of it goes, whatever its name.
      kill -TERM -- "-$pid" 2>/dev/null || true
      for n in $(seq 50); do
        [ -n "$(members "$pid" "")" ] || break
        sleep 0.1
      done
      left=$(members "$pid" "")
      if [ -n "$left" ]; then
        kill -KILL -- "-$pid" 2>/dev/null || true
      fi
      [ "${3:-}" = quiet ] || say "stopped $name (process group $pid)"
    else
      say "$name: stale pid file (pid ${pid:-none} is gone or not ours): removed"
    fi
    rm -f "$f"
  fi
}

# stop_all [quiet]: stop both emulators.
stop_all() {
  stop_one s3 fakes3 "${1:-}"
  stop_one dynamodb dynalite "${1:-}"
  rm -f "$envfile" "$state/s3.addr"
}

# selftest: start and stop in a scratch folder; fail if a process of a
# group we started outlives stop, if a stale pid file stops a start, or if
# stop kills the stranger a stale pid file names.
selftest() {
  local groups g child n
  scratch=$(mktemp -d)
  stranger=
  trap 'BULWARK_EMULATORS_DIR="$scratch" "$0" stop >/dev/null 2>&1 || true; [ -z "$stranger" ] || kill "$stranger" 2>/dev/null || true; rm -rf "$scratch"' EXIT
  # A stranger: a process of ours that is no emulator, leading a process
  # group of its own, named in one pid file; the other names a pid that
  # runs nothing.
  setsid sleep 300 </dev/null >/dev/null 2>&1 &
  stranger=$!
  echo "$stranger" >"$scratch/s3.pid"
  echo 999999999 >"$scratch/dynamodb.pid"
  BULWARK_EMULATORS_DIR="$scratch" "$0" start || { kill "$stranger"; die "selftest: start with stale pid files failed"; }
  kill -0 "$stranger" 2>/dev/null || die "selftest: start killed the process a stale pid file named"
  groups="$(cat "$scratch/s3.pid") $(cat "$scratch/dynamodb.pid")"
  for g in $groups; do
    [ "$g" != "$stranger" ] || die "selftest: the stale pid file was kept"
    [ -n "$(members "$g" "")" ] || die "selftest: no process in group $g after start"
  done
  BULWARK_EMULATORS_DIR="$scratch" "$0" stop
  for g in $groups; do
    if [ -n "$(members "$g" "")" ]; then
      ps -eo pid,pgid,args | awk -v g="$g" '$2 == g' >&2
      die "selftest: process group $g has processes left after stop"
    fi
  done
  [ ! -e "$scratch/s3.pid" ] && [ ! -e "$scratch/dynamodb.pid" ] || die "selftest: pid files left after stop"
  # stop with a pid file naming the stranger's group: it must live.
  echo "$stranger" >"$scratch/s3.pid"
  BULWARK_EMULATORS_DIR="$scratch" "$0" stop
  kill -0 "$stranger" 2>/dev/null || die "selftest: stop killed the process a stale pid file named"
  # A wrapper that started a child and waits for it, as npm does: stop
  # must take the child too.
  state=$scratch
  spawn wrapper "$scratch/wrapper.log" sh -c 'sleep 301 & echo $! >"$0"; wait' "$scratch/child.pid"
  for n in $(seq 100); do [ -s "$scratch/child.pid" ] && break; sleep 0.05; done
  child=$(cat "$scratch/child.pid")
  kill -0 "$child" 2>/dev/null || die "selftest: the wrapper's child did not start"
  stop_one wrapper "sleep 301" quiet
  for n in $(seq 50); do kill -0 "$child" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$child" 2>/dev/null; then
    kill "$child"
    die "selftest: the wrapper's child (pid $child) outlived stop"
  fi
  say "selftest: passed (groups $groups gone after stop, a wrapper's child too; stale pid files removed, their processes untouched)"
}

case "${1:-}" in
  start) start ;;
  stop) [ -d "$state" ] && stop_all; true ;;
  env)
    [ -f "$envfile" ] && alive s3 fakes3 && alive dynamodb dynalite ||
      die "not running: run .ci/emulators.sh start"
    cat "$envfile"
    ;;
  status)
    if alive s3 fakes3 && alive dynamodb dynalite; then
      echo "running ($state)"; cat "$envfile"
    else
      echo "not running"; exit 1
    fi
    ;;
  selftest) selftest ;;
  *) echo "usage: $0 start|stop|env|status|selftest" >&2; exit 2 ;;
esac
