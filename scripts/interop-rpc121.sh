#!/usr/bin/env bash
# The reference 18.1.21 RpcClient (from its package sources in .interop)
# drives OUR `omp --mode rpc` against the fake Anthropic upstream declared as
# a models.yml provider: a prompt, and a message over the 1 MiB line limit
# read back whole through getMessages (scripts/rpc121-client.ts).
# Usage: scripts/interop-rpc121.sh [reference-dir] [bin-dir]
# (`make interop` runs it); INTEROP_KEEP=1 keeps the work dir.
set -euo pipefail
ref=${1:-.interop}; bin=${2:-bin}
bun="$ref/node_modules/@oven/bun-linux-x64/bin/bun"
client="$ref/node_modules/@oh-my-pi/pi-coding-agent/src/modes/rpc/rpc-client.ts"
[ -x "$bun" ] && [ -f "$client" ] || { echo "reference not installed in $ref (run: make interop)"; exit 2; }
for b in omp fakeupstream; do
  [ -x "$bin/$b" ] || { echo "missing $bin/$b (run: make interop)"; exit 2; }
done
bun=$(cd "$(dirname "$bun")" && pwd)/bun; client=$(cd "$(dirname "$client")" && pwd)/rpc-client.ts
bin=$(cd "$bin" && pwd); script=$(cd "$(dirname "$0")" && pwd)/rpc121-client.ts

name=interop-rpc121 keep_var=INTEROP_KEEP
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

agent_interop_home sk-interop-rpc121
mkdir -p "$work/project"
cd "$work/project"
RPC_CLIENT=$client OMP_BIN=$bin/omp SESSION_DIR=$work/sessions "$bun" "$script"
echo "$name: ok"
