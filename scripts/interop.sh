#!/usr/bin/env bash
# Interoperability check against the reference TypeScript implementation
# (npm @oh-my-pi/pi-coding-agent). Starts our broker on a free loopback port
# with a temporary home, stores credentials in it, then runs the reference
# `omp auth-broker status` and `omp auth-gateway serve` against it and lists
# the gateway's models. Usage: scripts/interop.sh [reference-dir]
# (`make interop` installs the reference into .interop/ first.)
set -euo pipefail
ref=${1:-.interop}
bun="$ref/node_modules/@oven/bun-linux-x64/bin/bun"
cli="$ref/node_modules/@oh-my-pi/pi-coding-agent/dist/cli.js"
[ -x "$bun" ] && [ -f "$cli" ] || { echo "reference not installed in $ref (run: make interop)"; exit 2; }
bun=$(cd "$(dirname "$bun")" && pwd)/bun; cli=$(cd "$(dirname "$cli")" && pwd)/cli.js
omp=$(pwd)/bin/omp
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
bport=$(free_port); gport=$(free_port)

# Our broker, in its own home.
mkdir -p "$work/broker"
HOME="$work/broker" "$omp" auth-broker serve --bind "127.0.0.1:$bport" >"$work/broker.log" 2>&1 &
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$bport/v1/healthz" >/dev/null && break; sleep 0.1; done
token=$(cat "$work/broker/.omp/auth-broker.token")
export OMP_AUTH_BROKER_URL="http://127.0.0.1:$bport" OMP_AUTH_BROKER_TOKEN="$token"
far=$(( ($(date +%s) + 86400) * 1000 ))
up() { curl -fsS -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -d "$1" "$OMP_AUTH_BROKER_URL/v1/credential" >/dev/null; }
up '{"provider":"anthropic","credential":{"type":"oauth","access":"sk-ant-oat01-interop","refresh":"sk-ant-ort01-interop","expires":'"$far"',"email":"interop@example.com"}}'
up '{"provider":"openai","credential":{"type":"api_key","key":"sk-interop"}}'

# The reference client, in another home.
mkdir -p "$work/client"
echo "== reference: omp auth-broker status"
HOME="$work/client" "$bun" "$cli" auth-broker status | tee "$work/status.out"
grep -q "^OK http://127.0.0.1:$bport" "$work/status.out"

echo "== reference: omp auth-gateway serve"
HOME="$work/client" "$bun" "$cli" auth-gateway serve --bind "127.0.0.1:$gport" >"$work/gateway.log" 2>&1 &
for _ in $(seq 100); do grep -q "listening" "$work/gateway.log" 2>/dev/null && break; sleep 0.2; done
cat "$work/gateway.log"
gtoken=$(cat "$work/client/.omp/auth-gateway.token")
models=$(curl -fsS -H "Authorization: Bearer $gtoken" "http://127.0.0.1:$gport/v1/models")
echo "$models" | python3 -c 'import json,sys; d=json.load(sys.stdin)["data"]; owners=sorted({m["owned_by"] for m in d}); print(len(d),"models from",owners); assert "anthropic" in owners and "openai" in owners, owners'
echo "== reference: stream sync sees a change"
up '{"provider":"openai","credential":{"type":"api_key","key":"sk-interop-2"}}'
sleep 1
curl -fsS -H "Authorization: Bearer $gtoken" "http://127.0.0.1:$gport/v1/credentials/check" | head -c 600; echo
if grep -qi "schema validation" "$work/gateway.log"; then echo "schema validation failures in the gateway log"; exit 1; fi

# The other direction: the reference broker, our client.
echo "== reference broker, our omp"
rport=$(free_port); mkdir -p "$work/refbroker" "$work/ourclient"
HOME="$work/refbroker" "$bun" "$cli" auth-broker serve --bind "127.0.0.1:$rport" >"$work/refbroker.log" 2>&1 &
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$rport/v1/healthz" >/dev/null && break; sleep 0.2; done
rtoken=$(cat "$work/refbroker/.omp/auth-broker.token")
export OMP_AUTH_BROKER_URL="http://127.0.0.1:$rport" OMP_AUTH_BROKER_TOKEN="$rtoken"
HOME="$work/ourclient" "$omp" auth-broker status | tee "$work/ourstatus.out"
grep -q "^OK http://127.0.0.1:$rport" "$work/ourstatus.out"
mkdir -p "$work/cpa"
cat >"$work/cpa/claude-interop.json" <<JSON
{"type":"claude","access_token":"sk-ant-oat01-ref","refresh_token":"sk-ant-ort01-ref","email":"ref@example.com","expired":"2099-01-01T00:00:00Z"}
JSON
HOME="$work/ourclient" "$omp" auth-broker import "$work/cpa" | tee "$work/ourimport.out"
snap=$(curl -fsS -H "Authorization: Bearer $rtoken" "$OMP_AUTH_BROKER_URL/v1/snapshot")
echo "$snap" | python3 -c 'import json,sys; d=json.load(sys.stdin); c=[e for e in d["credentials"] if e["provider"]=="anthropic"]; print("reference broker holds", len(c), "anthropic credential(s) imported by our omp"); assert c and c[0]["credential"]["refresh"]=="__remote__", d'
echo "interop OK"
