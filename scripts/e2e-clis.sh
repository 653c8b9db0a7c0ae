#!/usr/bin/env bash
# `make e2e-clis`: the real Claude Code, Codex and Gemini CLIs (from npm,
# cached in the given dir) complete a one-shot prompt through our gateway
# against a fake upstream (tools/fakeupstream). Everything runs on
# loopback under a throwaway home; no provider is contacted.
#   broker  ← POST /v1/credential: an anthropic, an openai and a google API key
#   gateway → OMP_PROVIDER_{ANTHROPIC,OPENAI,GOOGLE}_BASE_URL = the fake
#   claude -p / codex exec / gemini -p → the gateway with the gateway token
# The Gemini CLI also runs a tool-using turn: the fake answers a prompt
# holding TOOL-TURN with a list_directory call, the CLI runs it and sends
# the result back, and the fake then answers with its text.
# It asserts each CLI exits 0 printing the fake's answer, and that the fake
# saw the broker-held keys and never the gateway token.
# Usage: scripts/e2e-clis.sh [cli-dir] [bin-dir]; E2E_CLIS=claude|codex|gemini
# runs one only; E2E_KEEP=1 keeps the work dir (logs) for inspection.
# The fake saves each upstream body under <work>/upstream-bodies.
# Claude runs with its own default model (claude-opus-4-8 for Claude Code
# 2.1.197, which puts a role "system" entry inside messages[]);
# E2E_CLAUDE_MODEL=<id> pins another.
set -euo pipefail
clis=${1:-.e2e-clis}; bin=${2:-bin}
clis=$(cd "$clis" && pwd); bin=$(cd "$bin" && pwd)
claude="$clis/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
[ -x "$claude" ] || claude="$clis/node_modules/.bin/claude"
codex="$clis/node_modules/.bin/codex"
gemini="$clis/node_modules/.bin/gemini"
which=${E2E_CLIS:-claude codex gemini}
answer="pong from fake upstream"
anthropic_key=sk-ant-api03-e2e-broker-held
openai_key=sk-proj-e2e-broker-held
google_key=AIzaSy-e2e-broker-held
gemini_model=${E2E_GEMINI_MODEL:-gemini-2.5-flash}
claude_model=${E2E_CLAUDE_MODEL:-}
codex_model=${E2E_CODEX_MODEL:-gpt-5}

name=e2e-clis keep_var=E2E_KEEP
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

# The fake upstream.
mkdir -p "$work/upstream-bodies"
start_fake_upstream -dump-dir "$work/upstream-bodies"

# The broker, with one API key per provider.
export HOME="$work/home"
mkdir -p "$HOME"
unset PI_CONFIG_DIR PI_CODING_AGENT_DIR XDG_DATA_HOME XDG_CACHE_HOME OMP_AUTH_BROKER_URL OMP_AUTH_BROKER_TOKEN
bport=$(free_port); gport=$(free_port)
"$bin/omp" auth-broker serve --bind "127.0.0.1:$bport" >"$work/broker.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$bport/v1/healthz" "${pids[-1]}" broker
btoken=$(cat "$HOME/.omp/auth-broker.token")
up() { curl -fsS -H "Authorization: Bearer $btoken" -H 'Content-Type: application/json' -d "$1" "http://127.0.0.1:$bport/v1/credential" >/dev/null; }
up '{"provider":"anthropic","credential":{"type":"api_key","key":"'"$anthropic_key"'"}}'
up '{"provider":"openai","credential":{"type":"api_key","key":"'"$openai_key"'"}}'
up '{"provider":"google","credential":{"type":"api_key","key":"'"$google_key"'"}}'

# The gateway, its upstreams pointed at the fake.
gtoken=$("$bin/omp" auth-gateway token)
OMP_AUTH_BROKER_URL="http://127.0.0.1:$bport" \
OMP_PROVIDER_ANTHROPIC_BASE_URL="$upstream" \
OMP_PROVIDER_OPENAI_BASE_URL="$upstream/v1" \
OMP_PROVIDER_GOOGLE_BASE_URL="$upstream/v1beta" \
  "$bin/gateway" --bind "127.0.0.1:$gport" >"$work/gateway.log" 2>&1 &
pids+=($!)
gateway="http://127.0.0.1:$gport"
wait_for "$gateway/healthz" "${pids[-1]}" gateway
echo "e2e-clis: upstream $upstream, broker 127.0.0.1:$bport, gateway $gateway (work dir $work)"

fail=0
check() { # name outfile rc
  if [ "$3" -eq 0 ] && grep -qF "$answer" "$2"; then
    echo "== $1: OK (exit 0, printed \"$answer\")"
  else
    echo "== $1: FAILED (exit $3)"; sed 's/^/   | /' "$2" | tail -40
    fail=1
  fi
}

# Off-network environment shared by both CLIs.
export NO_PROXY='*' no_proxy='*'

if [[ " $which " == *" claude "* ]]; then
  chome="$work/claude-home"; mkdir -p "$chome/.claude"
  # Skip onboarding and the API-key approval prompt (last 20 chars of the key).
  python3 - "$chome/.claude.json" "$gtoken" <<'PY'
import json, sys
path, key = sys.argv[1], sys.argv[2]
json.dump({"hasCompletedOnboarding": True, "numStartups": 1, "theme": "dark",
           "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
           "bypassPermissionsModeAccepted": True}, open(path, "w"))
PY
  set +e
  (cd "$work" && HOME="$chome" CLAUDE_CONFIG_DIR="$chome/.claude" \
    ANTHROPIC_BASE_URL="$gateway" ANTHROPIC_API_KEY="$gtoken" \
    DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 DISABLE_AUTOUPDATER=1 \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_NON_ESSENTIAL_MODEL_CALLS=1 \
    CLAUDE_CODE_SKIP_FAST_MODE_NETWORK_ERRORS=1 \
    timeout 120 "$claude" -p "say pong" ${claude_model:+--model "$claude_model"} </dev/null >"$work/claude.out" 2>&1)
  rc=$?; set -e
  check "claude -p (Claude Code $("$claude" --version 2>/dev/null | head -1))" "$work/claude.out" "$rc"
fi

if [[ " $which " == *" codex "* ]]; then
  cx="$work/codex-home"; mkdir -p "$cx"
  cat >"$cx/config.toml" <<TOML
model = "$codex_model"
model_provider = "omp"

[model_providers.omp]
name = "omp gateway"
base_url = "$gateway/v1"
env_key = "OMP_GATEWAY_TOKEN"
wire_api = "responses"
TOML
  set +e
  (cd "$work" && HOME="$cx" CODEX_HOME="$cx" OMP_GATEWAY_TOKEN="$gtoken" \
    timeout 120 "$codex" exec --skip-git-repo-check "say pong" </dev/null >"$work/codex.out" 2>&1)
  rc=$?; set -e
  check "codex exec ($("$codex" --version 2>/dev/null | head -1))" "$work/codex.out" "$rc"
fi

if [[ " $which " == *" gemini "* ]]; then
  gh="$work/gemini-home"; mkdir -p "$gh/.gemini" "$work/gemini-project"
  echo "a file for list_directory" >"$work/gemini-project/marker.txt"
  # The API-key auth type: with GOOGLE_GEMINI_BASE_URL set the CLI picks
  # its "gateway" type on its own, which -p then refuses ("Invalid auth
  # method selected", Gemini CLI 0.61); the API-key type honours the base
  # URL too. No telemetry, usage statistics or update checks (no network).
  cat >"$gh/.gemini/settings.json" <<'JSON'
{"security": {"auth": {"selectedType": "gemini-api-key"}},
 "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false},
 "general": {"disableAutoUpdate": true, "disableUpdateNag": true}}
JSON
  gem() { # outfile prompt...
    local out=$1; shift
    (cd "$work/gemini-project" && HOME="$gh" GOOGLE_GEMINI_BASE_URL="$gateway" GEMINI_API_KEY="$gtoken" \
      GEMINI_CLI_TRUST_WORKSPACE=true timeout 120 "$gemini" -m "$gemini_model" -p "$@" </dev/null >"$out" 2>&1)
  }
  gversion=$("$gemini" --version 2>/dev/null | head -1)
  set +e
  gem "$work/gemini.out" "say pong"; rc=$?
  set -e
  check "gemini -p (Gemini CLI $gversion)" "$work/gemini.out" "$rc"
  set +e
  gem "$work/gemini-tool.out" "TOOL-TURN: list the files in this directory, then say pong"; rc=$?
  set -e
  check "gemini -p, a list_directory turn (Gemini CLI $gversion)" "$work/gemini-tool.out" "$rc"
  # The CLI ran the tool and sent its result back through the gateway.
  if grep -l '"functionResponse"' "$work"/upstream-bodies/*_v1beta_* 2>/dev/null | xargs -r grep -l 'marker.txt' >/dev/null; then
    echo "== gemini tool turn: OK (the list_directory result, naming marker.txt, reached the upstream)"
  else
    echo "== gemini tool turn: FAILED (no functionResponse naming marker.txt reached the upstream)"; fail=1
  fi
fi

# What reached the upstream: the broker's keys, never the gateway token.
echo "== upstream requests"
python3 - "$work/upstream.jsonl" "$gtoken" "$anthropic_key" "$openai_key" "$google_key" <<'PY' || fail=1
import json, sys
path, gtoken, akey, okey, gkey = sys.argv[1:6]
rows = [json.loads(l) for l in open(path)] if open(path).read().strip() else []
ok = True
for r in rows:
    print(f"   {r['method']} {r['path']} model={r.get('model','')} stream={r['stream']} -> {r['status']}"
          f"  x-api-key={r.get('x_api_key','')[:16]}… x-goog-api-key={r.get('x_goog_api_key','')[:16]}… auth={r.get('authorization','')[:23]}…")
    cred = r.get("x_api_key", "") + " " + r.get("x_goog_api_key", "") + " " + r.get("authorization", "")
    if gtoken in cred:
        print("   !! the gateway token reached the upstream"); ok = False
    want = akey if r["path"].startswith("/v1/messages") else gkey if r["path"].startswith("/v1beta/") else okey
    if want not in cred:
        print(f"   !! expected the broker-held key {want}"); ok = False
if not rows:
    print("   !! the upstream saw no request"); ok = False
sys.exit(0 if ok else 1)
PY
[ "$fail" -eq 0 ] && echo "e2e-clis OK" || { echo "e2e-clis FAILED"; exit 1; }
