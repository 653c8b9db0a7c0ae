#!/usr/bin/env bash
# The reference TypeScript omp and our broker on one host, in one HOME
# (discrepancies.md C5): our broker keeps its sealed vault in vault.db and
# never touches the reference's plain agent.db beside it, so while our
# broker runs the reference `omp auth-broker import` writes its agent.db,
# `list` and `status` work, and `migrate --from-local` uploads the
# reference's local credentials to our broker, which keeps serving. Our
# `migrate --from-local --dry-run` reads that agent.db without changing it.
# Then the snapshot cache both ways: the reference's own cache code reads
# what we write and we read what it writes (pkg/vault/remote Interop tests).
# Usage: scripts/interop-samehome.sh [reference-dir] [bin-dir]
set -euo pipefail
name=interop-samehome keep_var=INTEROP_KEEP
ref=${1:-.interop}; bin=${2:-bin}
source "$(dirname "$0")/lib.sh"
bun="$ref/node_modules/@oven/bun-linux-x64/bin/bun"
cli="$ref/node_modules/@oh-my-pi/pi-coding-agent/dist/cli.js"
[ -x "$bun" ] && [ -f "$cli" ] || { echo "$name: reference not installed in $ref (run: make interop)"; exit 2; }
ref=$(cd "$ref" && pwd); bun="$ref/node_modules/@oven/bun-linux-x64/bin/bun"; cli="$ref/node_modules/@oh-my-pi/pi-coding-agent/dist/cli.js"
omp=$(cd "$bin" && pwd)/omp
user_home=$HOME
export HOME="$work/home"; mkdir -p "$HOME"
unset OMP_AUTH_BROKER_URL OMP_AUTH_BROKER_TOKEN PI_CODING_AGENT_DIR PI_CONFIG_DIR XDG_DATA_HOME XDG_CACHE_HOME
agentdb="$HOME/.omp/agent/agent.db"; vaultdb="$HOME/.omp/agent/vault.db"
refomp() { "$bun" "$cli" "$@"; }

port=$(free_port); url="http://127.0.0.1:$port"
"$omp" auth-broker serve --bind "127.0.0.1:$port" >"$work/broker.log" 2>&1 &
pids+=($!)
wait_for "$url/v1/healthz" "${pids[0]}" broker
token=$(cat "$HOME/.omp/auth-broker.token")
far=$(( ($(date +%s) + 86400) * 1000 ))
curl -fsS -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"provider":"openai","credential":{"type":"api_key","key":"sk-ours-samehome"}}' "$url/v1/credential" >/dev/null
[ -f "$vaultdb" ] || { echo "$name: our broker has no vault.db"; exit 1; }

echo "== reference: omp auth-broker import (local, same HOME as our running broker)"
mkdir -p "$work/cpa"
cat >"$work/cpa/claude-samehome.json" <<JSON
{"type":"claude","access_token":"sk-ant-oat01-samehome","refresh_token":"sk-ant-ort01-samehome","email":"samehome@example.com","expired":"2099-01-01T00:00:00Z"}
JSON
refomp auth-broker import "$work/cpa" | tee "$work/refimport.out"
grep -q "imported anthropic: samehome@example.com" "$work/refimport.out"
[ -f "$agentdb" ] || { echo "$name: the reference wrote no agent.db"; exit 1; }

echo "== reference: omp auth-broker list"
refomp auth-broker list | tee "$work/reflist.out"
grep -q anthropic "$work/reflist.out"

export OMP_AUTH_BROKER_URL="$url"   # the token comes from the shared token file
echo "== reference: omp auth-broker status"
refomp auth-broker status | tee "$work/refstatus.out"
grep -q "^OK $url" "$work/refstatus.out"

echo "== ours: omp auth-broker migrate --from-local --dry-run reads the reference agent.db"
before=$(sha256sum "$agentdb" | cut -d' ' -f1)
"$omp" auth-broker migrate --from-local --include-oauth --dry-run | tee "$work/ourmigrate.out"
grep -q "\[local-sqlite\] anthropic samehome@example.com" "$work/ourmigrate.out"
[ "$before" = "$(sha256sum "$agentdb" | cut -d' ' -f1)" ] || { echo "$name: our migrate changed agent.db"; exit 1; }

echo "== reference: omp auth-broker migrate --from-local --include-oauth to our broker"
refomp auth-broker migrate --from-local --include-oauth | tee "$work/refmigrate.out"
grep -q "uploaded \[local-sqlite\] anthropic samehome@example.com" "$work/refmigrate.out"

echo "== our broker keeps serving, with both credentials"
curl -fsS "$url/v1/healthz" >/dev/null
curl -fsS -H "Authorization: Bearer $token" "$url/v1/snapshot" | python3 -c '
import json, sys
d = json.load(sys.stdin)
got = sorted((e["provider"], e["credential"].get("email") or e["credential"].get("key")) for e in d["credentials"])
print("our broker holds", got)
assert ("anthropic", "samehome@example.com") in got and ("openai", "sk-ours-samehome") in got, got'
if grep -qi "no such column\|SQLITE_\|panic" "$work/broker.log"; then echo "$name: errors in our broker log"; cat "$work/broker.log"; exit 1; fi

echo "== snapshot cache, both ways, with the reference's own code"
(cd "$(dirname "$0")/.." && HOME="$user_home" OMP_INTEROP_REF="$ref" go test -count=1 -run Interop ./pkg/vault/remote/)
echo "$name OK"
