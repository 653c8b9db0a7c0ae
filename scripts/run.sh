#!/usr/bin/env bash
# `make run`: the broker on loopback with a default vault under a throwaway
# home (./.run), so it never touches ~/.omp. Ctrl-C stops it.
set -euo pipefail
home=${1:?run home}; bin=${2:?bin dir}
mkdir -p "$home"
home=$(cd "$home" && pwd); bin=$(cd "$bin" && pwd)
export HOME="$home"
unset PI_CONFIG_DIR PI_CODING_AGENT_DIR XDG_DATA_HOME XDG_CACHE_HOME OMP_AUTH_BROKER_URL OMP_AUTH_BROKER_TOKEN
bind=${OMP_BROKER_BIND:-127.0.0.1:8765}
token_file="$home/.omp/auth-broker.token"
"$bin/omp" auth-broker token >/dev/null
cat <<TXT
omp-go broker
  URL         http://$bind
  token file  $token_file
  vault       $home/.omp/agent/agent.db (key: $home/.omp/vault.key)
  try         curl -s -H "Authorization: Bearer \$(cat $token_file)" http://$bind/v1/snapshot
  clients     OMP_AUTH_BROKER_URL=http://$bind OMP_AUTH_BROKER_TOKEN=\$(cat $token_file) omp auth-broker status
TXT
exec "$bin/omp" auth-broker serve --bind "$bind"
