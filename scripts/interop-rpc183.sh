#!/usr/bin/env bash
# The reference 18.3.4 RpcClient (from its package sources, installed by
# scripts/interop183-install.sh) drives OUR `omp --mode rpc` against the fake
# Anthropic upstream declared as a models.yml provider: promptAndWait (which
# waits for prompt_result), waitForSettled (get_state.isSettled, then
# session_settled), messageId, get_entries, get_tree, set_event_filter,
# get_available_thinking_levels and protocol 2 (a message over 1 MiB
# through getMessages, paged and chunked) (scripts/rpc183-client.ts).
# Usage: scripts/interop-rpc183.sh [reference-183-dir] [bin-dir]
# (`make interop183` runs it); INTEROP_KEEP=1 keeps the work dir.
set -euo pipefail
ref=${1:-.interop183}; bin=${2:-bin}
bun="$ref/node_modules/@oven/bun-linux-x64/bin/bun"
client="$ref/node_modules/@oh-my-pi/pi-coding-agent/src/modes/rpc/rpc-client.ts"
[ -x "$bun" ] && [ -f "$client" ] || { echo "reference 18.3.4 not installed in $ref (run: make interop183)"; exit 2; }
for b in omp fakeupstream; do
  [ -x "$bin/$b" ] || { echo "missing $bin/$b (run: make interop183)"; exit 2; }
done
bun=$(cd "$(dirname "$bun")" && pwd)/bun; client=$(cd "$(dirname "$client")" && pwd)/rpc-client.ts
bin=$(cd "$bin" && pwd); script=$(cd "$(dirname "$0")" && pwd)/rpc183-client.ts

name=interop-rpc183 keep_var=INTEROP_KEEP
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

agent_interop_home sk-interop-rpc183
mkdir -p "$work/project"
cd "$work/project"
RPC_CLIENT=$client OMP_BIN=$bin/omp SESSION_DIR=$work/sessions "$bun" "$script"
echo "$name: ok"
