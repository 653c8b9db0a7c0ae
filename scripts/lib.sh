# Shared by the end-to-end scripts (e2e-clis.sh, interop-gateway.sh), which
# source it after setting $name (the prefix of their messages) and $keep_var
# (the variable that keeps the work dir, e.g. E2E_KEEP).
#
# It makes $work, kills every pid pushed on $pids on exit, keeps $work when
# the script failed or $keep_var is set, and defines free_port, wait_for and
# start_fake_upstream.

work=$(mktemp -d "${TMPDIR:-/tmp}/omp-$name.XXXXXX")
pids=()
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$rc" -ne 0 ] || [ -n "${!keep_var:-}" ]; then
    echo "$name: logs kept in $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

wait_for() { # url pid name: until url answers 2xx; fail if the process exits
  for _ in $(seq 100); do
    curl -fs "$1" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || { echo "$name: $3 exited" >&2; cat "$work/$3.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$name: $3 did not come up" >&2; exit 1
}

start_fake_upstream() { # extra fakeupstream flags...; sets $upstream
  "$bin/fakeupstream" -log "$work/upstream.jsonl" -addr-file "$work/upstream.addr" "$@" >"$work/upstream.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$work/upstream.addr" ] && break; sleep 0.05; done
  [ -s "$work/upstream.addr" ] || { echo "$name: fake upstream did not come up" >&2; exit 1; }
  upstream="http://$(cat "$work/upstream.addr")"
}

# agent_interop_home KEY: a clean environment (no broker, no provider keys,
# proxies pointing nowhere but loopback) and a throwaway HOME whose
# models.yml declares the fake upstream (started here, requests dumped in
# $work/dump) as provider "fake" with the API key KEY (in $FAKE_KEY).
agent_interop_home() {
  unset PI_CONFIG_DIR PI_CODING_AGENT_DIR XDG_DATA_HOME XDG_CACHE_HOME XDG_CONFIG_HOME \
    OMP_AUTH_BROKER_URL OMP_AUTH_BROKER_TOKEN ANTHROPIC_API_KEY OPENAI_API_KEY
  export HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 http_proxy=http://127.0.0.1:9 \
    https_proxy=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
  mkdir -p "$work/dump"
  start_fake_upstream -dump-dir "$work/dump"
  export HOME="$work/home" FAKE_KEY=$1
  mkdir -p "$HOME/.omp/agent"
  cat >"$HOME/.omp/agent/models.yml" <<YML
providers:
  fake:
    baseUrl: $upstream
    apiKey: FAKE_KEY
    api: anthropic-messages
    auth: apiKey
    models:
      - id: fake-model
        contextWindow: 200000
        maxTokens: 8192
YML
}
