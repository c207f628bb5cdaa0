#!/usr/bin/env bash
# The bulwark demo: three acts on the five-resource stack in examples/stack.yaml,
# in a scratch state folder, on the mock provider (or PROVIDER=local).
# Run it with `make demo`, which builds bin/ first.
set -u
cd "$(dirname "$0")/.."
provider=${PROVIDER:-mock}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/bulwark-demo.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
bw() { ./bin/bulwark --state-dir "$scratch/state" --events "$scratch/events.jsonl" "$@"; }
bold() { if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then printf '\033[1m%s\033[0m\n' "$*"; else printf '%s\n' "$*"; fi; }
expect() { # expect CODE what
  if [ "$code" -ne "$1" ]; then echo "demo: expected exit $1 ($2), got $code" >&2; exit 1; fi
  echo "→ exit $code: $2"
}

bold "bulwark demo — provider: $provider, scratch state: $scratch"
echo "The stack (examples/stack.yaml): network, storage (s3_bucket, durable),"
echo "database (dynamodb_table, protected), compute and load_balancer (ephemeral)."
echo

bold "Act 1. The apply fails at compute (step 4 of 5)."
echo "Rollback runs in reverse dependency order: it deletes the network it just"
echo "created, but preserves the durable bucket and the protected table."
echo "\$ bulwark apply --yes examples/stack.yaml --provider $provider --simulate-failure compute"
bw apply --yes examples/stack.yaml --provider "$provider" --simulate-failure compute; code=$?
expect 11 "compensated: the apply was rolled back, data kept"
echo
bw status examples/stack.yaml
echo

bold "Act 2. The re-apply converges."
echo "The bucket and the table already exist and are skipped; only what is missing is created."
echo "\$ bulwark apply --yes examples/stack.yaml --provider $provider"
bw apply --yes examples/stack.yaml --provider "$provider"; code=$?
expect 0 "reality matches the spec"
echo "Once more, to show a re-run is a no-op:"
bw apply --yes examples/stack.yaml --provider "$provider"; code=$?
expect 0 "nothing to do"
echo

bold "Act 3. The teardown is refused."
echo "database is protected, so the whole teardown is rejected before anything is deleted."
echo "\$ bulwark teardown examples/stack.yaml --yes"
bw teardown examples/stack.yaml --yes; code=$?
expect 3 "refused by protection: nothing was deleted"
bw status examples/stack.yaml
echo
echo "Lifecycle events (one JSON line per resource transition) went to --events;"
echo "the first three of $(wc -l < "$scratch/events.jsonl"):"
head -n 3 "$scratch/events.jsonl"
echo
bold "Done: every act behaved as promised."
