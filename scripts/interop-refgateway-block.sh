#!/usr/bin/env bash
# Fleet interop: a REFERENCE 18.1.21 gateway (`omp auth-gateway serve` of
# npm @oh-my-pi/pi-coding-agent) on OUR broker posts a block after an
# upstream usage limit, and our broker publishes it to the fleet:
#   fake upstream answering 429 ← reference gateway ← our broker
# The reference gateway's anthropic base URL points at the fake
# (ANTHROPIC_BASE_URL); one request through the gateway meets the 429, the
# reference marks the account (markUsageLimitReached) and writes the block
# through to our broker; our snapshot (capabilities header) must then
# carry it on that credential, and our log must show the upsert.
# Usage: scripts/interop-refgateway-block.sh [reference-dir] [bin-dir]
# (`make interop` and `make interop-refgateway-block` run it); INTEROP_KEEP=1 keeps the work dir.
set -euo pipefail
ref=${1:-.interop}; bin=${2:-bin}
bun="$ref/node_modules/@oven/bun-linux-x64/bin/bun"
cli="$ref/node_modules/@oh-my-pi/pi-coding-agent/dist/cli.js"
[ -x "$bun" ] && [ -f "$cli" ] || { echo "reference not installed in $ref (run: make interop-install)"; exit 2; }
[ -x "$bin/omp" ] || { echo "missing $bin/omp (run: make build)"; exit 2; }
bun=$(cd "$(dirname "$bun")" && pwd)/bun; cli=$(cd "$(dirname "$cli")" && pwd)/cli.js
bin=$(cd "$bin" && pwd)

name=interop-refgateway-block keep_var=INTEROP_KEEP
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

unset PI_CONFIG_DIR PI_CODING_AGENT_DIR XDG_DATA_HOME XDG_CACHE_HOME XDG_CONFIG_HOME \
  OMP_AUTH_BROKER_URL OMP_AUTH_BROKER_TOKEN ANTHROPIC_API_KEY OPENAI_API_KEY
export HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 http_proxy=http://127.0.0.1:9 \
  https_proxy=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost

# The fake upstream: every POST is a 429 usage limit with a 10-minute hint.
fport=$(free_port)
python3 - "$fport" >"$work/fake.log" 2>&1 <<'PY' &
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps({"type": "error", "error": {"type": "rate_limit_error",
            "message": "You have reached your usage limit (usage_limit_reached). It resets in 10 minutes."}}).encode()
        self.send_response(429)
        self.send_header("content-type", "application/json")
        self.send_header("retry-after", "600")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print("429", self.path, flush=True)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
pids+=($!)
fake="http://127.0.0.1:$fport"

# Our broker with two anthropic OAuth accounts that do not expire soon.
bhome="$work/broker-home"; mkdir -p "$bhome"
bport=$(free_port); gport=$(free_port)
HOME="$bhome" "$bin/omp" auth-broker serve --bind "127.0.0.1:$bport" >"$work/broker.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$bport/v1/healthz" "${pids[-1]}" broker
broker="http://127.0.0.1:$bport"
btoken=$(cat "$bhome/.omp/auth-broker.token")
up() { curl -fsS -H "Authorization: Bearer $btoken" -H 'Content-Type: application/json' -d "$1" "$broker/v1/credential" >/dev/null; }
far=$(( ($(date +%s) + 86400) * 1000 ))
up '{"provider":"anthropic","credential":{"type":"oauth","access":"sk-ant-oat01-fleet-a","refresh":"sk-ant-ort01-fleet-a","expires":'"$far"',"email":"fleet-a@example.com"}}'
up '{"provider":"anthropic","credential":{"type":"oauth","access":"sk-ant-oat01-fleet-b","refresh":"sk-ant-ort01-fleet-b","expires":'"$far"',"email":"fleet-b@example.com"}}'

# The reference gateway on our broker, anthropic pointed at the fake
# (ANTHROPIC_BASE_URL: the gateway ignores models.yml).
ghome="$work/gateway-home"; mkdir -p "$ghome"
HOME="$ghome" OMP_AUTH_BROKER_URL="$broker" OMP_AUTH_BROKER_TOKEN="$btoken" ANTHROPIC_BASE_URL="$fake" \
  "$bun" "$cli" auth-gateway serve --bind "127.0.0.1:$gport" >"$work/gateway.log" 2>&1 &
pids+=($!)
for _ in $(seq 150); do grep -q "listening" "$work/gateway.log" 2>/dev/null && break; sleep 0.2; done
gtoken=$(cat "$ghome/.omp/auth-gateway.token")
echo "interop-refgateway-block: fake $fake, our broker $broker, reference gateway http://127.0.0.1:$gport"

set +e
curl -sS -m 60 -o "$work/reply.json" -w '%{http_code}\n' -H "Authorization: Bearer $gtoken" -H 'Content-Type: application/json' \
  -H 'session_id: fleet-1' -d '{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}' \
  "http://127.0.0.1:$gport/v1/messages" >"$work/status.txt"
set -e
echo "interop-refgateway-block: gateway answered $(cat "$work/status.txt"); fake saw $(grep -c '^429' "$work/fake.log" || true) request(s)"

fail=1
for _ in $(seq 50); do
  snap=$(curl -fsS -H "Authorization: Bearer $btoken" -H 'OMP-Auth-Broker-Capabilities: codex-meter-block-scopes' "$broker/v1/snapshot")
  if echo "$snap" | python3 -c '
import json, sys, time
d = json.load(sys.stdin)
now = time.time() * 1000
hits = [(e["id"], b) for e in d["credentials"] for b in e.get("blocks", []) if b["providerKey"] == "anthropic:oauth" and b["blockedUntilMs"] > now]
print(hits) if hits else None
sys.exit(0 if hits else 1)'; then fail=0; break; fi
  sleep 0.2
done
if [ "$fail" -eq 0 ] && grep -q "auth-broker credential block upserted" "$work/broker.log"; then
  echo "OK   the reference gateway's usage-limit block reached our broker's snapshot"
  echo "interop-refgateway-block OK"
else
  echo "FAIL no anthropic:oauth block on our broker after the reference gateway met a 429"
  echo "--- gateway log"; tail -40 "$work/gateway.log"; echo "--- broker log"; grep -i "block\|credential" "$work/broker.log" | tail -20
  exit 1
fi
