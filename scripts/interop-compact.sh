#!/usr/bin/env bash
# Compaction interop of the reference TypeScript omp (npm
# @oh-my-pi/pi-coding-agent 18.1.21) with OUR agent, on loopback under a
# throwaway home, against the fake Anthropic upstream declared as a
# models.yml custom provider. config.yml makes both agents compact after
# every run (compaction.thresholdTokens: 1, keepRecentTokens: 1, and
# methodOrder: [soft], the summary compaction both implement).
# 1. The reference runs two prompts and compacts; our `omp -c -p` loads the
#    file and continues: its request starts with the reference's summary
#    and leaves out the summarised turn.
# 2. We compact after that run; the reference `omp -c -p` loads our
#    compaction: its request starts with our summary.
# Usage: scripts/interop-compact.sh [reference-dir] [bin-dir]
# (`make interop` runs it); INTEROP_KEEP=1 keeps the work dir.
set -euo pipefail
ref=${1:-.interop}; bin=${2:-bin}
bun="$ref/node_modules/@oven/bun-linux-x64/bin/bun"
cli="$ref/node_modules/@oh-my-pi/pi-coding-agent/dist/cli.js"
[ -x "$bun" ] && [ -f "$cli" ] || { echo "reference not installed in $ref (run: make interop)"; exit 2; }
for b in omp fakeupstream; do
  [ -x "$bin/$b" ] || { echo "missing $bin/$b (run: make interop)"; exit 2; }
done
bun=$(cd "$(dirname "$bun")" && pwd)/bun; cli=$(cd "$(dirname "$cli")" && pwd)/cli.js
bin=$(cd "$bin" && pwd)

name=interop-compact keep_var=INTEROP_KEEP
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

agent_interop_home sk-interop-compact
cat >"$HOME/.omp/agent/config.yml" <<YML
compaction:
  enabled: true
  methodOrder: [soft]
  thresholdTokens: 1
  keepRecentTokens: 1
  autoContinue: false
YML
reference() { "$bun" "$cli" "$@" 2>>"$work/reference.log"; }
ours() { "$bin/omp" "$@" 2>>"$work/ours.log"; }
fail() { echo "$name: FAIL: $*" >&2; exit 1; }
session() { ls "$HOME"/.omp/agent/sessions/*p1/*.jsonl; }
# check.py <what> ...: the assertions, on the session file and the dumps.
cat >"$work/check.py" <<'PY'
import glob, json, sys
what, path, dump = sys.argv[1], sys.argv[2], sys.argv[3]
entries = [json.loads(l) for l in open(path) if l.strip()]
entries = [e for e in entries if e.get("type") not in ("title", "session")]
comps = [e for e in entries if e["type"] == "compaction"]
reqs = sorted(glob.glob(dump + "/*.json"))
def request(i):
    return json.load(open(reqs[i]))
def text(m):
    c = m["content"]
    return c if isinstance(c, str) else "".join(b.get("text", "") for b in c)
def fail(msg):
    print(msg); sys.exit(1)
if what == "ref-compacted":
    if not comps: fail("the reference wrote no compaction entry")
    print(len(comps), len(reqs))
elif what == "ours-continued":
    # args: compactions-before, requests-before
    nc, nr = int(sys.argv[4]), int(sys.argv[5])
    ref = comps[nc - 1]
    first = request(nr)  # our first request after loading
    msgs = first["messages"]
    if ref["summary"] not in text(msgs[0]): fail("our request does not start with the reference's summary: %r" % text(msgs[0])[:300])
    if any("one, from the reference" in text(m) for m in msgs): fail("our request still carries the summarised turn")
    if not any("three, from go" in text(m) for m in msgs): fail("our prompt is missing")
    ours = comps[nc:]
    if not ours: fail("we wrote no compaction entry")
    if "method" in ours[-1]: fail("our compaction entry has a method field?")
    print(len(comps), len(reqs))
elif what == "ref-continued":
    nc, nr = int(sys.argv[4]), int(sys.argv[5])
    mine = comps[nc - 1]
    msgs = request(nr)["messages"]
    if mine["summary"] not in text(msgs[0]): fail("the reference's request does not start with our summary: %r" % text(msgs[0])[:300])
    if not any("four, from the reference" in text(m) for m in msgs): fail("the reference's prompt is missing")
    if any("three, from go" == text(m) for m in msgs[:1]): fail("summarised turn sent")
PY
check() { python3 "$work/check.py" "$1" "$(session)" "$work/dump" "${@:2}" || fail "$1"; }

mkdir -p "$work/p1" && cd "$work/p1"
reference -p --model fake/fake-model "one, from the reference" >/dev/null || fail "reference -p"
reference -c -p "two, from the reference" >/dev/null || fail "reference -c -p"
read -r nc nr < <(check ref-compacted)
echo "$name: the reference wrote $nc compaction(s) in $nr requests"
ours -c -p "three, from go" >/dev/null || fail "our -c on a compacted reference session"
read -r nc2 nr2 < <(check ours-continued "$nc" "$nr")
echo "$name: ok: ours continues a session the reference compacted (its summary first), and compacts it again"
reference -c -p "four, from the reference" >/dev/null || fail "reference -c on our compacted session"
check ref-continued "$nc2" "$nr2"
[ "$(ls "$HOME"/.omp/agent/sessions/*p1/*.jsonl | wc -l)" = 1 ] || fail "a second session file appeared"
echo "$name: ok: the reference continues a session we compacted (our summary first)"
