#!/usr/bin/env bash
# A reference RpcClient (from the reference package's own sources) drives
# OUR `omp --mode rpc` against the fake Anthropic upstream declared as a
# models.yml provider. The client script says what is checked:
# - scripts/rpc121-client.ts (reference 18.1.21, .interop): a prompt, and a
#   message over the 1 MiB line limit read back whole through getMessages;
# - scripts/rpc183-client.ts (reference 18.3.4, .interop183): promptAndWait
#   (which waits for prompt_result), waitForSettled, messageId, get_entries,
#   get_tree, set_event_filter, get_available_thinking_levels and protocol 2
#   (a message over 1 MiB through getMessages, paged and chunked).
# Usage: scripts/interop-rpc.sh reference-dir bin-dir client-script
# (`make interop` and `make interop183` run it); INTEROP_KEEP=1 keeps the
# work dir.
set -euo pipefail
ref=$1; bin=$2; script=$3
bun="$ref/node_modules/@oven/bun-linux-x64/bin/bun"
client="$ref/node_modules/@oh-my-pi/pi-coding-agent/src/modes/rpc/rpc-client.ts"
[ -x "$bun" ] && [ -f "$client" ] || { echo "reference not installed in $ref (run: make interop / make interop183)"; exit 2; }
for b in omp fakeupstream; do
  [ -x "$bin/$b" ] || { echo "missing $bin/$b (run: make interop)"; exit 2; }
done
bun=$(cd "$(dirname "$bun")" && pwd)/bun; client=$(cd "$(dirname "$client")" && pwd)/rpc-client.ts
bin=$(cd "$bin" && pwd); script=$(cd "$(dirname "$script")" && pwd)/$(basename "$script")

name=interop-rpc keep_var=INTEROP_KEEP
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

agent_interop_home sk-interop-rpc
mkdir -p "$work/project"
cd "$work/project"
RPC_CLIENT=$client OMP_BIN=$bin/omp SESSION_DIR=$work/sessions "$bun" "$script"
echo "$name: ok ($(basename "$script"))"
