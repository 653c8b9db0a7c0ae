#!/usr/bin/env bash
# `make run`: the broker and the gateway on loopback under a throwaway home
# (./.run), so it never touches ~/.omp. The broker keeps a default vault;
# the gateway is its client (broker URL from the environment, its token from
# the same home's auth-broker.token). The broker serves the offline demo
# provider (--demo: model demo-echo, no account), so the first request
# printed below answers at once. Ctrl-C stops both.
set -euo pipefail
home=${1:?run home}; bin=${2:?bin dir}
mkdir -p "$home"
home=$(cd "$home" && pwd); bin=$(cd "$bin" && pwd)
export HOME="$home"
unset PI_CONFIG_DIR PI_CODING_AGENT_DIR XDG_DATA_HOME XDG_CACHE_HOME OMP_AUTH_BROKER_URL OMP_AUTH_BROKER_TOKEN
bind=${OMP_BROKER_BIND:-127.0.0.1:8765}
gw_bind=${OMP_GATEWAY_BIND:-127.0.0.1:4000}
token_file="$home/.omp/auth-broker.token"
gw_token_file="$home/.omp/auth-gateway.token"
"$bin/omp" auth-broker token >/dev/null
"$bin/omp" auth-gateway token >/dev/null
cat <<TXT
omp-go broker
  URL         http://$bind
  token file  $token_file
  vault       $home/.omp/agent/vault.db (key: $home/.omp/vault.key)
  try         curl -s -H "Authorization: Bearer \$(cat $token_file)" http://$bind/v1/snapshot
  clients     OMP_AUTH_BROKER_URL=http://$bind OMP_AUTH_BROKER_TOKEN=\$(cat $token_file) omp auth-broker status
omp-go gateway
  URL         http://$gw_bind
  token file  $gw_token_file
  try         curl -s -H "Authorization: Bearer \$(cat $gw_token_file)" http://$gw_bind/v1/models
demo provider (offline, not a real account; model demo-echo)
  first request through the gateway:
    curl -s http://$gw_bind/v1/chat/completions -H "Authorization: Bearer \$(cat $gw_token_file)" -H 'content-type: application/json' -d '{"model":"demo-echo","messages":[{"role":"user","content":"hello"}]}'
  the agent:
    OMP_AUTH_BROKER_URL=http://$bind OMP_AUTH_BROKER_TOKEN=\$(cat $token_file) $bin/omp -p --no-session --model demo-echo hello
  a real account instead: HOME=$home $bin/omp auth-broker login anthropic
TXT

"$bin/omp" auth-broker serve --demo --bind "$bind" &
broker=$!
gateway=
stop() {
  [ -n "$gateway" ] && kill -TERM "$gateway" 2>/dev/null || true
  kill -TERM "$broker" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT TERM

export OMP_AUTH_BROKER_URL="http://$bind"
# The gateway needs the broker's first snapshot: wait until it answers.
for _ in $(seq 1 100); do
  "$bin/omp" auth-broker status >/dev/null 2>&1 && break
  kill -0 "$broker" 2>/dev/null || { echo "run: the broker exited" >&2; exit 1; }
  sleep 0.1
done
"$bin/omp" auth-gateway serve --bind "$gw_bind" &
gateway=$!
wait -n "$broker" "$gateway"
