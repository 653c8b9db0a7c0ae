#!/bin/sh
# stackcheck: run pkg/proxy's TestRequestPathStackBudget against a runtime
# whose newstack reports every goroutine that outgrows 8 KiB (issue 9). The
# overlay is made from this Go's own runtime/stack.go, so it follows the
# toolchain; it fails loudly if the line it patches is gone.
set -eu
GO=${GO:-go}
root=$($GO env GOROOT)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
src="$root/src/runtime/stack.go"
anchor='	newsize := oldsize \* 2'
grep -q "^$anchor\$" "$src" || { echo "stackcheck: $src has no '$anchor' line to patch" >&2; exit 1; }
sed "s/^$anchor\$/&\\
	if oldsize >= 8192 { print(\"STACKGROW \", oldsize, \" goid=\", gp.goid, \"\\\\n\"); traceback(gp.sched.pc, gp.sched.sp, gp.sched.lr, gp) }/" "$src" > "$dir/stack.go"
grep -q STACKGROW "$dir/stack.go" || { echo "stackcheck: patching $src failed" >&2; exit 1; }
printf '{"Replace":{"%s":"%s"}}\n' "$src" "$dir/stack.go" > "$dir/overlay.json"
status=0
GOTRACEBACK=system $GO test -count=1 -tags stackprobe -overlay "$dir/overlay.json" \
  -run '^TestRequestPathStackBudget$' -v ./pkg/proxy/ >"$dir/out" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then cat "$dir/out"; else grep -E '^(--- |ok )|^ +stackprobe_test.go:[0-9]+: ' "$dir/out"; fi
exit "$status"
