#!/usr/bin/env bash
# The reference TypeScript omp and our broker on one host, in one HOME:
# our broker keeps its sealed vault in vault.db and
# never touches the reference's plain agent.db beside it, so while our
# broker runs the reference `omp auth-broker import` writes its agent.db,
# `list` and `status` work, and `migrate --from-local` uploads the
# reference's local credentials to our broker, which keeps serving. Our
# `migrate --from-local --dry-run` reads that agent.db without changing it.
# Then the snapshot cache on one host: with the broker stopped, our
# `omp usage` and our gateway boot from the cache the reference client wrote and the
# reference's from ours (same HOME, token and URL); and the reference's own
# cache code reads what we write and we read what it writes
# (pkg/vault/remote Interop tests).
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

echo "== snapshot cache on one host: each client, with the broker stopped, boots from the cache the other wrote"
cache="$HOME/.omp/cache/auth-broker-snapshot.enc"
want='anthropic samehome@example.com' # omp usage lists accounts of providers with a usage endpoint
accounts() { # omp usage --json on stdin → the accounts it lists, sorted
  python3 -c '
import json, sys
d = json.load(sys.stdin)
rows = d["accountsWithoutUsage"] + [{"provider": r["provider"], "email": (r.get("metadata") or {}).get("email")} for r in d["reports"]]
print("|".join(sorted(r["provider"] + " " + (r.get("email") or r.get("type") or "?") for r in rows)))'
}
broker_down() { kill -TERM "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true; ! curl -fs "$url/v1/healthz" >/dev/null 2>&1; }
broker_up() {
  "$omp" auth-broker serve --bind "127.0.0.1:$port" >>"$work/broker.log" 2>&1 &
  pids[0]=$!
  wait_for "$url/v1/healthz" "${pids[0]}" broker
}
expect_accounts() { # who out
  local got; got=$(accounts <"$2")
  [ "$got" = "$want" ] || { echo "$name: $1 listed [$got], want [$want]"; exit 1; }
}
rm -f "$cache"
refomp usage --json >"$work/refusage-live.json"
head -c 5 "$cache" | od -An -c | grep -q 'O   M   P   S 002' || { echo "$name: the reference wrote no version 2 cache at $cache"; exit 1; }
broker_down
"$omp" usage --json >"$work/ourusage-refcache.json" || { echo "$name: our omp usage did not boot from the reference's cache"; exit 1; }
expect_accounts "our omp usage from the reference's cache" "$work/ourusage-refcache.json"
gport=$(free_port)
"$omp" auth-gateway serve --bind "127.0.0.1:$gport" >"$work/gateway.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$gport/healthz" "${pids[-1]}" gateway
curl -fsS -H "Authorization: Bearer $(cat "$HOME/.omp/auth-gateway.token")" "http://127.0.0.1:$gport/v1/models" | grep -q '"owned_by":"anthropic"' ||
  { echo "$name: our gateway, started with the broker down, serves no model from the reference's cache"; exit 1; }
grep -q "started from the snapshot cache" "$work/gateway.log" || { echo "$name: our gateway does not say it serves the cache"; exit 1; }
kill -TERM "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
rm -f "$cache"
broker_up
"$omp" usage --json >"$work/ourusage-live.json"
[ -s "$cache" ] || { echo "$name: our omp usage wrote no cache at $cache"; exit 1; }
broker_down
refomp usage --json >"$work/refusage-ourcache.json" || { echo "$name: the reference omp usage did not boot from our cache"; exit 1; }
expect_accounts "the reference omp usage from our cache" "$work/refusage-ourcache.json"
rm -f "$cache"
if refomp usage --json >"$work/refusage-nocache.json" 2>&1; then
  echo "$name: the reference omp usage succeeded with the broker down and no cache (the check above proves nothing)"; exit 1
fi

echo "== snapshot cache, both ways, with the reference's own code"
(cd "$(dirname "$0")/.." && HOME="$user_home" OMP_INTEROP_REF="$ref" go test -count=1 -run Interop ./pkg/vault/remote/)
echo "$name OK"
