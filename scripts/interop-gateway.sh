#!/usr/bin/env bash
# Interop of the reference TypeScript omp (npm @oh-my-pi/pi-coding-agent)
# with OUR gateway, all on loopback under throwaway homes:
#   fake upstream (tools/fakeupstream) ← our gateway ← our broker
# 1. The reference `omp -p` completes a prompt through our gateway via a
#    models.yml custom provider, once per wire api (openai-completions,
#    anthropic-messages, openai-responses) and once with the `anthropic`
#    provider overridden to `transport: pi-native`; each must exit 0 and
#    print the fake's answer. The fake must see the broker-held keys, never
#    the gateway token.
# 2. `auth-gateway check --json` of the reference and of ours against the
#    same broker (an anthropic and an openai API key, an anthropic OAuth
#    credential) must agree after normalisation, except for the differences
#    listed in KNOWN below (printed as KNOWN DIFF, not a failure).
# Outbound traffic of the reference and of our omp goes to a dead proxy
# (HTTP(S)_PROXY=127.0.0.1:9, NO_PROXY=loopback) so nothing leaves the host.
# Usage: scripts/interop-gateway.sh [reference-dir] [bin-dir]
# (`make interop` runs it); INTEROP_KEEP=1 keeps the work dir.
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
answer="pong from fake upstream"
anthropic_key=sk-ant-api03-interop-broker-held
openai_key=sk-proj-interop-broker-held
oauth_access=sk-ant-oat01-interop-broker-held

name=interop-gateway keep_var=INTEROP_KEEP
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

unset PI_CONFIG_DIR PI_CODING_AGENT_DIR XDG_DATA_HOME XDG_CACHE_HOME XDG_CONFIG_HOME \
  OMP_AUTH_BROKER_URL OMP_AUTH_BROKER_TOKEN ANTHROPIC_API_KEY OPENAI_API_KEY
export HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 http_proxy=http://127.0.0.1:9 \
  https_proxy=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost

# The fake upstream.
start_fake_upstream

# Our broker: two API keys and an OAuth credential that does not expire soon
# (so neither check refreshes it).
bhome="$work/broker-home"; mkdir -p "$bhome"
bport=$(free_port); gport=$(free_port)
HOME="$bhome" "$bin/omp" auth-broker serve --bind "127.0.0.1:$bport" >"$work/broker.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$bport/v1/healthz" "${pids[-1]}" broker
broker="http://127.0.0.1:$bport"
btoken=$(cat "$bhome/.omp/auth-broker.token")
up() { curl -fsS -H "Authorization: Bearer $btoken" -H 'Content-Type: application/json' -d "$1" "$broker/v1/credential" >/dev/null; }
far=$(( ($(date +%s) + 86400) * 1000 ))
up '{"provider":"anthropic","credential":{"type":"api_key","key":"'"$anthropic_key"'"}}'
up '{"provider":"openai","credential":{"type":"api_key","key":"'"$openai_key"'"}}'
up '{"provider":"anthropic","credential":{"type":"oauth","access":"'"$oauth_access"'","refresh":"sk-ant-ort01-interop","expires":'"$far"',"email":"interop@example.com"}}'

# Our gateway, its upstreams pointed at the fake.
gtoken=$(HOME="$bhome" "$bin/omp" auth-gateway token)
HOME="$bhome" OMP_AUTH_BROKER_URL="$broker" \
OMP_PROVIDER_ANTHROPIC_BASE_URL="$upstream" OMP_PROVIDER_OPENAI_BASE_URL="$upstream/v1" \
  "$bin/gateway" --bind "127.0.0.1:$gport" >"$work/gateway.log" 2>&1 &
pids+=($!)
gateway="http://127.0.0.1:$gport"
wait_for "$gateway/healthz" "${pids[-1]}" gateway
echo "interop-gateway: upstream $upstream, broker $broker, gateway $gateway"
echo "interop-gateway: reference omp $("$bun" "$cli" --version 2>/dev/null | head -1)"

fail=0
# 1. The reference omp -p through our gateway.
run_print() { # name model models.yml-body
  local name=$1 model=$2 home="$work/client-$1"
  mkdir -p "$home/.omp/agent" "$home/cwd"
  printf '%s\n' "$3" >"$home/.omp/agent/models.yml"
  set +e
  (cd "$home/cwd" && HOME="$home" OMP_GATEWAY_TOKEN="$gtoken" \
    timeout 120 "$bun" "$cli" -p --no-session --model "$model" "say pong" </dev/null >"$work/$name.out" 2>&1)
  local rc=$?; set -e
  if [ "$rc" -eq 0 ] && grep -qF "$answer" "$work/$name.out"; then
    echo "OK   reference omp -p --model $model ($name) through our gateway"
  else
    echo "FAIL reference omp -p --model $model ($name) through our gateway (exit $rc)"
    sed 's/^/   | /' "$work/$name.out" | tail -30; fail=1
  fi
}
custom() { # provider api baseUrl model
  printf 'providers:\n  %s:\n    baseUrl: %s\n    apiKey: OMP_GATEWAY_TOKEN\n    api: %s\n    auth: apiKey\n    models:\n      - id: %s\n' "$1" "$3" "$2" "$4"
}
run_print openai-completions ompgw/claude-sonnet-4-5 "$(custom ompgw openai-completions "$gateway/v1" claude-sonnet-4-5)"
run_print anthropic-messages ompgw/claude-sonnet-4-5 "$(custom ompgw anthropic-messages "$gateway" claude-sonnet-4-5)"
run_print openai-responses ompgw/gpt-5 "$(custom ompgw openai-responses "$gateway/v1" gpt-5)"
run_print pi-native anthropic/claude-sonnet-4-5 "$(printf 'providers:\n  anthropic:\n    baseUrl: %s\n    apiKey: OMP_GATEWAY_TOKEN\n    transport: pi-native\n' "$gateway")"
for f in openai-chat anthropic-messages openai-responses pi-native; do
  grep -q "format=$f " "$work/gateway.log" || { echo "FAIL our gateway logged no $f request"; fail=1; }
done

python3 - "$work/upstream.jsonl" "$gtoken" "$anthropic_key $oauth_access" "$openai_key" <<'PY' || fail=1
import json, sys
path, gtoken, akeys, okey = sys.argv[1:5]
text = open(path).read() if __import__("os").path.exists(path) else ""
rows = [json.loads(l) for l in text.splitlines() if l.strip()]
ok = bool(rows)
for r in rows:
    cred = r.get("x_api_key", "") + " " + r.get("authorization", "")
    wants = akeys.split() if r["path"].startswith("/v1/messages") else [okey]
    if gtoken in cred or not any(w in cred for w in wants):
        ok = False
        print(f"   !! {r['method']} {r['path']} reached the fake without a broker-held key (or with the gateway token)")
print(("OK  " if ok else "FAIL") + f" the fake upstream saw {len(rows)} request(s), each with a broker-held key, never the gateway token")
sys.exit(0 if ok else 1)
PY

# 2. check --json: the reference and ours against the same broker.
export OMP_AUTH_BROKER_URL="$broker" OMP_AUTH_BROKER_TOKEN="$btoken"
mkdir -p "$work/check-ref" "$work/check-ours"
set +e
HOME="$work/check-ref" timeout 120 "$bun" "$cli" auth-gateway check --json >"$work/check-ref.json" 2>"$work/check-ref.err"; rrc=$?
HOME="$work/check-ours" timeout 120 "$bin/omp" auth-gateway check --json >"$work/check-ours.json" 2>"$work/check-ours.err"; orc=$?
set -e
python3 - "$work/check-ref.json" "$rrc" "$work/check-ours.json" "$orc" <<'PY' || fail=1
import json, sys
refp, rrc, oursp, orc = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
def load(p):
    try:
        return json.load(open(p))
    except Exception as e:
        print(f"FAIL {p} is not JSON: {e}"); sys.exit(1)
ref, ours = load(refp), load(oursp)
VOLATILE = {"fetchedAt", "checkedAt", "updatedAt", "resetsAt", "lastSync", "latencyMs", "durationMs"}
def norm(v):
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items() if k not in VOLATILE}
    if isinstance(v, list):
        return [norm(x) for x in v]
    return v
# Known differences, by (provider, type): {field: (reference value, our
# value or its prefix)}, printed as KNOWN DIFF. None today; the one this
# check found (the offline Claude usage probe: reference ok=null "no data",
# ours ok=false with the transport error) is fixed in pkg/vault/usage.
KNOWN = {}
ok = True
if rrc != orc:
    print(f"FAIL check --json exit codes differ: reference {rrc}, ours {orc}"); ok = False
for k in ("broker", "strict"):
    if ref.get(k) != ours.get(k):
        print(f"FAIL check --json {k}: reference {ref.get(k)!r}, ours {ours.get(k)!r}"); ok = False
rc_, oc_ = norm(ref.get("credentials", [])), norm(ours.get("credentials", []))
if [c.get("id") for c in rc_] != [c.get("id") for c in oc_]:
    print(f"FAIL check --json credential ids: reference {[c.get('id') for c in rc_]}, ours {[c.get('id') for c in oc_]}"); ok = False
for r, o in zip(rc_, oc_):
    known = KNOWN.get((r.get("provider"), r.get("type")), {})
    for f in sorted(set(r) | set(o)):
        rv, ov = r.get(f, "<absent>"), o.get(f, "<absent>")
        if rv == ov:
            continue
        kv = known.get(f)
        if kv and rv == kv[0] and (ov == kv[1] or (isinstance(ov, str) and ov.startswith(kv[1]))):
            print(f"KNOWN DIFF credential {r.get('id')} ({r.get('provider')} {r.get('type')}) {f}: reference {rv!r}, ours {ov!r}")
            continue
        print(f"FAIL check --json credential {r.get('id')} ({r.get('provider')} {r.get('type')}) {f}: reference {rv!r}, ours {ov!r}"); ok = False
if ok:
    print(f"OK   auth-gateway check --json: reference and ours agree on {len(rc_)} credential(s) (exit {rrc})")
sys.exit(0 if ok else 1)
PY

[ "$fail" -eq 0 ] && echo "interop-gateway OK" || { echo "interop-gateway FAILED"; exit 1; }
