#!/usr/bin/env bash
# Fleet interop: OUR gateway's block reaches a REFERENCE 18.1.21
# gateway through OUR broker, all on loopback under throwaway homes:
#   fake upstream (account X answers a usage-limit 429)
#   ← our gateway  ─┐
#   ← reference gateway ─ both following our broker (two anthropic API keys X, Y)
# 1. A session that both gateways map to X (API-key order by xxHash32 of the session)
#    is sent to our gateway: X answers 429, our gateway fails over to Y and
#    posts the block (POST /v1/credential/:id/block).
# 2. The same session sent to the reference gateway must be served by Y
#    without X being tried: the reference read the block from our broker's
#    snapshot stream (it sends the capabilities header, which is what
#    makes the snapshot carry blocks).
# 3. Control: the block lifted (DELETE /v1/credential/1/blocks), the
#    reference tries X first again for that session.
# Outbound traffic goes to a dead proxy (HTTP(S)_PROXY=127.0.0.1:9).
# Usage: scripts/interop-fleet.sh [reference-dir] [bin-dir] (`make interop`);
# INTEROP_KEEP=1 keeps the work dir.
set -euo pipefail
ref=${1:-.interop}; bin=${2:-bin}
bun="$ref/node_modules/@oven/bun-linux-x64/bin/bun"
cli="$ref/node_modules/@oh-my-pi/pi-coding-agent/dist/cli.js"
[ -x "$bun" ] && [ -f "$cli" ] || { echo "reference not installed in $ref (run: make interop)"; exit 2; }
for b in omp gateway fakeupstream; do
  [ -x "$bin/$b" ] || { echo "missing $bin/$b (run: make interop)"; exit 2; }
done
bun=$(cd "$(dirname "$bun")" && pwd)/bun; cli=$(cd "$(dirname "$cli")" && pwd)/cli.js
bin=$(cd "$bin" && pwd)
key_x=sk-ant-api03-fleet-account-x
key_y=sk-ant-api03-fleet-account-y

name=interop-fleet keep_var=INTEROP_KEEP
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

unset PI_CONFIG_DIR PI_CODING_AGENT_DIR XDG_DATA_HOME XDG_CACHE_HOME XDG_CONFIG_HOME \
  OMP_AUTH_BROKER_URL OMP_AUTH_BROKER_TOKEN ANTHROPIC_API_KEY OPENAI_API_KEY
export HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 http_proxy=http://127.0.0.1:9 \
  https_proxy=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost

start_fake_upstream -limit-key "$key_x"

bhome="$work/broker-home"; mkdir -p "$bhome"
bport=$(free_port); gport=$(free_port); rport=$(free_port)
HOME="$bhome" "$bin/omp" auth-broker serve --bind "127.0.0.1:$bport" >"$work/broker.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$bport/v1/healthz" "${pids[-1]}" broker
broker="http://127.0.0.1:$bport"
btoken=$(cat "$bhome/.omp/auth-broker.token")
up() { curl -fsS -H "Authorization: Bearer $btoken" -H 'Content-Type: application/json' -d "$1" "$broker/v1/credential" >/dev/null; }
up '{"provider":"anthropic","credential":{"type":"api_key","key":"'"$key_x"'"}}'
up '{"provider":"anthropic","credential":{"type":"api_key","key":"'"$key_y"'"}}'

# Our gateway.
ghome="$work/our-gateway"; mkdir -p "$ghome"
HOME="$ghome" OMP_AUTH_BROKER_URL="$broker" OMP_AUTH_BROKER_TOKEN="$btoken" \
OMP_PROVIDER_ANTHROPIC_BASE_URL="$upstream" \
  "$bin/gateway" --bind "127.0.0.1:$gport" >"$work/gateway.log" 2>&1 &
pids+=($!)
ours="http://127.0.0.1:$gport"
wait_for "$ours/healthz" "${pids[-1]}" "our gateway"
otoken=$(cat "$ghome/.omp/auth-gateway.token")

# The reference gateway, its anthropic base URL pointed at the fake
# (ANTHROPIC_BASE_URL: the reference gateway ignores models.yml).
rhome="$work/ref-gateway"; mkdir -p "$rhome/.omp/agent"
HOME="$rhome" OMP_AUTH_BROKER_URL="$broker" OMP_AUTH_BROKER_TOKEN="$btoken" ANTHROPIC_BASE_URL="$upstream" \
  "$bun" "$cli" auth-gateway serve --bind "127.0.0.1:$rport" >"$work/ref-gateway.log" 2>&1 &
pids+=($!)
for _ in $(seq 150); do grep -q "listening" "$work/ref-gateway.log" 2>/dev/null && break; sleep 0.2; done
grep -q "listening" "$work/ref-gateway.log" || { echo "FAIL reference gateway did not start"; cat "$work/ref-gateway.log"; exit 1; }
reference="http://127.0.0.1:$rport"
rtoken=$(cat "$rhome/.omp/auth-gateway.token")
echo "interop-fleet: upstream $upstream, broker $broker, our gateway $ours, reference gateway $reference"

chat() { # base token session → HTTP status
  curl -sS -o "$work/last.out" -w '%{http_code}' -H "Authorization: Bearer $2" -H 'Content-Type: application/json' \
    -H "session_id: $3" -d '{"model":"anthropic/claude-sonnet-4-5","messages":[{"role":"user","content":"say pong"}]}' \
    "$1/v1/chat/completions"
}
keys_since() { # line → the credentials of /v1/messages requests after that line
  tail -n +"$(( $1 + 1 ))" "$work/upstream.jsonl" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r["path"].startswith("/v1/messages"):
        print(r.get("x_api_key") or r.get("authorization", "").removeprefix("Bearer "))'
}
lines() { wc -l <"$work/upstream.jsonl" 2>/dev/null || echo 0; }

fail=0
# 1. Our gateway meets the limit on X for a session that maps to X.
sid=""
for i in $(seq 0 15); do
  n=$(lines)
  st=$(chat "$ours" "$otoken" "fleet-interop-$i")
  seen=$(keys_since "$n" | tr '\n' ' ')
  if [ "$st" = 200 ] && [ "$seen" = "$key_x $key_y " ]; then sid="fleet-interop-$i"; break; fi
done
if [ -z "$sid" ]; then
  echo "FAIL no session of our gateway met the 429 on X and failed over to Y"; fail=1
else
  echo "OK   our gateway: session $sid met the usage limit on X and was served by Y"
fi
sleep 1 # the block crosses broker → stream → reference (within a second)
blocks=$(curl -fsS -H "Authorization: Bearer $btoken" -H 'OMP-Auth-Broker-Capabilities: codex-meter-block-scopes' "$broker/v1/snapshot" |
  python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(len(e.get("blocks",[])) for e in d["credentials"]))')
[ "$blocks" -ge 1 ] && echo "OK   our broker holds $blocks block(s)" || { echo "FAIL our broker holds no block"; fail=1; }

# 2. The reference gateway, same session: Y, and X never tried.
if [ -n "$sid" ]; then
  n=$(lines)
  st=$(chat "$reference" "$rtoken" "$sid")
  seen=$(keys_since "$n" | tr '\n' ' ')
  if [ "$st" = 200 ] && [ "$seen" = "$key_y " ]; then
    echo "OK   reference gateway: session $sid served by Y without trying X (our block reached it)"
  else
    echo "FAIL reference gateway: session $sid → HTTP $st, upstream saw [$seen], want only Y"; fail=1
    tail -20 "$work/ref-gateway.log" | sed 's/^/   | /'
  fi
fi
# Control: with the block lifted at the broker the reference tries X first
# for that session again, so step 2 passed because of the block.
if [ -n "$sid" ]; then
  curl -fsS -X DELETE -H "Authorization: Bearer $btoken" "$broker/v1/credential/1/blocks" >/dev/null
  sleep 1
  n=$(lines)
  chat "$reference" "$rtoken" "$sid" >/dev/null
  seen=$(keys_since "$n" | head -1)
  if [ "$seen" = "$key_x" ]; then
    echo "OK   control: with the block lifted the reference gateway tries X first for $sid"
  else
    echo "FAIL control: with the block lifted the reference gateway first tried [$seen], want X"; fail=1
  fi
fi
if grep -qi "schema validation" "$work/ref-gateway.log"; then echo "FAIL schema validation failures in the reference gateway log"; fail=1; fi

[ "$fail" -eq 0 ] && echo "interop-fleet OK" || { echo "interop-fleet FAILED"; exit 1; }
