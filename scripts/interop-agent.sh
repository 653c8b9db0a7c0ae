#!/usr/bin/env bash
# Session-file interop of the reference TypeScript omp (npm
# @oh-my-pi/pi-coding-agent) with OUR agent, on loopback under a throwaway
# home, against the fake Anthropic upstream (tools/fakeupstream)
# declared as a models.yml custom provider:
# 1. The reference `omp -p` starts a session; our `omp -c -p` continues it:
#    exit 0, the same file grows, and our request carries the reference's
#    turn (3 messages upstream).
# 2. Our `omp -p` starts a session; the reference `omp -c -p` continues it
#    the same way.
# Usage: scripts/interop-agent.sh [reference-dir] [bin-dir]
# (`make interop` runs it); INTEROP_KEEP=1 keeps the work dir.
set -euo pipefail
ref=${1:-.interop}; bin=${2:-bin}
bun="$ref/node_modules/@oven/bun-linux-x64/bin/bun"
cli="$ref/node_modules/@oh-my-pi/pi-coding-agent/dist/cli.js"
[ -x "$bun" ] && [ -f "$cli" ] || { echo "reference not installed in $ref (run: make interop)"; exit 2; }
for b in omp fakeupstream; do
  [ -x "$bin/$b" ] || { echo "missing $bin/$b (run: make interop)"; exit 2; }
done
bun=$(cd "$(dirname "$bun")" && pwd)/bun; cli=$(cd "$(dirname "$cli")" && pwd)/cli.js
bin=$(cd "$bin" && pwd)

name=interop-agent keep_var=INTEROP_KEEP
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

agent_interop_home sk-interop-agent
reference() { "$bun" "$cli" "$@" 2>>"$work/reference.log"; }
ours() { "$bin/omp" "$@" 2>>"$work/ours.log"; }
fail() { echo "$name: FAIL: $*" >&2; exit 1; }
# last_request_messages: the message count of the newest upstream request.
last_request_messages() {
  python3 -c 'import json,sys,glob; f=sorted(glob.glob(sys.argv[1]+"/*.json"))[-1]; print(len(json.load(open(f))["messages"]))' "$work/dump"
}
session_lines() { cat "$HOME"/.omp/agent/sessions/*"$1"/*.jsonl | wc -l; }

mkdir -p "$work/p1" "$work/p2"
cd "$work/p1"
reference -p --model fake/fake-model "first, from the reference" >/dev/null || fail "reference -p"
before=$(session_lines p1)
ours -c -p "second, from go" >/dev/null || fail "our -c on a reference session"
[ "$(last_request_messages)" = 3 ] || fail "our continued request has $(last_request_messages) messages, want 3"
[ "$(session_lines p1)" -eq $((before + 2)) ] || fail "our continuation did not append to the reference's file"
[ "$(ls "$HOME"/.omp/agent/sessions/*p1/*.jsonl | wc -l)" = 1 ] || fail "a second session file appeared"
echo "$name: ok: ours continues a reference session"

cd "$work/p2"
ours -p --model fake/fake-model "first, from go" >/dev/null || fail "our -p"
reference -c -p "second, from the reference" >/dev/null || fail "reference -c on our session"
[ "$(last_request_messages)" = 3 ] || fail "the reference's continued request has $(last_request_messages) messages, want 3"
[ "$(ls "$HOME"/.omp/agent/sessions/*p2/*.jsonl | wc -l)" = 1 ] || fail "the reference started a new file"
echo "$name: ok: the reference continues our session"
