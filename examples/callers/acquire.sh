#!/bin/sh
# Waits for an outbound budget's turn through the rate-limit service, runs a command, then frees
# the budget's concurrency slot, renewing it meanwhile (docs/callers.md, "Callers that are not
# Node"). Needs only sh and curl: the shape of a caller in any language.
#
#   RATELIMIT_SERVICE_SECRET=... examples/callers/acquire.sh <budget> <key> -- <command> [args...]
#   RATELIMIT_SERVICE_SECRET=... examples/callers/acquire.sh crawl example.com -- curl -s https://example.com/
#
# The budget is one of the policy's outbound budgets (the console's Outbound budgets page); the
# key is shaped as its keyBy says (empty "" for keyBy single).
# Environment: RATELIMIT_SERVICE_URL (default http://127.0.0.1:8080), RATELIMIT_SERVICE_SECRET
# (required), COST (default 1), MAX_WAIT_MS (default: the budget's, capped by the service).
# Exit status: the command's; 75 when the wait would pass its maximum (the service's 429: retry
# after the Retry-After printed); 64 for bad usage; 1 for any other refusal.
set -eu

usage() {
  echo "usage: acquire.sh <budget> <key> -- <command> [args...]" >&2
  exit 64
}
[ "$#" -ge 4 ] && [ "$3" = "--" ] || usage
budget=$1
key=$2
shift 3
case "$key" in *'"'* | *'\'*) echo "acquire.sh: a key has no quotes or backslashes" >&2 && exit 64 ;; esac
url=${RATELIMIT_SERVICE_URL:-http://127.0.0.1:8080}/v1/outbound/$budget
secret=${RATELIMIT_SERVICE_SECRET:?set it to the shared secret of the service}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# POSTs $2 to $url/$1; the body lands in $work/body, the headers in $work/headers; prints the status.
call() {
  curl -sS -X POST -o "$work/body" -D "$work/headers" -w '%{http_code}' \
    -H "X-Limitplane-Secret: $secret" -H 'Content-Type: application/json' \
    --data "$2" "$url/$1"
}

request="{\"key\":\"$key\",\"cost\":${COST:-1}${MAX_WAIT_MS:+,\"maxWaitMs\":$MAX_WAIT_MS}}"
# A long poll: the answer comes when the turn does, or when the wait would pass its maximum.
status=$(call acquire "$request")
case "$status" in
  200) ;;
  429)
    retry=$(sed -n 's/^[Rr]etry-[Aa]fter: *\([0-9]*\).*/\1/p' "$work/headers")
    echo "acquire.sh: no turn within the wait; retry after ${retry:-1} s: $(cat "$work/body")" >&2
    exit 75
    ;;
  *)
    echo "acquire.sh: HTTP $status: $(cat "$work/body")" >&2
    exit 1
    ;;
esac

# A budget with a concurrency cap hands out a slot: renew it every third of its TTL while the
# command runs, and release it after (a slot not renewed lapses after its TTL anyway).
slot=$(sed -n 's/.*"slot":{"id":"\([0-9a-f]*\)","ttlMs":\([0-9]*\)}.*/\1 \2/p' "$work/body")
if [ -n "$slot" ]; then
  id=${slot% *}
  every=$(awk -v ttl="${slot#* }" 'BEGIN { print ttl / 3000 }')
  slot_body="{\"key\":\"$key\",\"slot\":\"$id\"}"
  (
    # Stopped with TERM: the pending sleep goes too, so it holds no output open after the exit.
    trap 'kill "$pause" 2>/dev/null; exit 0' TERM
    while :; do
      sleep "$every" &
      pause=$!
      wait "$pause"
      renewed=$(call renew "$slot_body") || renewed=error
      if [ "$renewed" != 200 ]; then
        echo "acquire.sh: the slot was lost (HTTP $renewed); the call now runs uncapped" >&2
        exit 0
      fi
    done
  ) &
  renewer=$!
fi

code=0
"$@" || code=$?

if [ -n "$slot" ]; then
  kill "$renewer" 2>/dev/null || true
  wait "$renewer" 2>/dev/null || true
  # 204 whether or not the slot was still held: a release is never harmful.
  call release "$slot_body" >/dev/null
fi
exit "$code"
