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
