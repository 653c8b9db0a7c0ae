#!/usr/bin/env bash
# Installs the reference omp 18.3.4 into a directory (default .interop183)
# so that its bundled dist/cli.js runs under Bun, and its RpcClient can be
# imported from the package's sources.
#
# 18.3.4 pins its @oh-my-pi/* dependencies at 18.3.4, which the registry does
# not serve; the bundle carries all of them except pi-natives (the Rust addon
# and its loader). So this script:
#   1. fetches the 18.3.4 package with `npm pack` and unpacks it into
#      node_modules/@oh-my-pi/pi-coding-agent (npm install would fail on the pins);
#   2. installs the bundle's other external dependencies, pi-utils 18.2.9
#      (the RpcClient imports it), pi-natives 18.2.10 (the newest loader served)
#      and pi-natives-linux-x64 18.2.11 (the newest addon served; there is no
#      18.2.10 addon);
#   3. satisfies the loader's version check by making it expect the addon it
#      has (18.2.11), with one copy of pi-natives for pi-utils and the bundle;
#   4. unpacks pi-ai 18.2.11 (the newest served; its snapshot-cache module,
#      unchanged in 18.3.4, is what the same-host cache checks import);
#   5. stubs the eight native exports the bundle imports beyond 18.2.10
#      (Apple foundation models, the shell filesystem hooks, the text
#      predictor); none is on the broker, gateway, usage or RPC paths.
# Idempotent: does nothing when the directory already holds 18.3.4.
set -euo pipefail
dir=${1:-.interop183}
version=18.3.4
mkdir -p "$dir" && cd "$dir"
pkg=node_modules/@oh-my-pi/pi-coding-agent
if [ -f "$pkg/package.json" ] && grep -q "\"version\": \"$version\"" "$pkg/package.json" \
  && [ -f node_modules/@oh-my-pi/pi-ai/src/auth-broker/snapshot-cache.ts ] \
  && grep -q 'interop harness only' node_modules/@oh-my-pi/pi-natives/native/index.js 2>/dev/null; then
  exit 0
fi
# An incomplete earlier install is started again from nothing: npm resolving
# against a half-written tree (or the unpacked package's pins) can run for a
# long time.
rm -rf node_modules package-lock.json
echo '{"private":true}' >package.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@oh-my-pi/pi-coding-agent@$version" >/dev/null && tar xzf ./*.tgz &&
  mkdir ai && npm pack --silent @oh-my-pi/pi-ai@18.2.11 >/dev/null && tar xzf oh-my-pi-pi-ai-*.tgz -C ai)
npm install --no-audit --no-fund --silent \
  @oven/bun-linux-x64@1.4.5 \
  @oh-my-pi/pi-utils@18.2.9 @oh-my-pi/pi-natives@18.2.10 @oh-my-pi/pi-natives-linux-x64@18.2.11 \
  "@babel/parser@^7.29.7" axe-core@4.13.0 puppeteer-core@25.3.0 \
  "@opentelemetry/api@^1.9.1" "@opentelemetry/api-logs@^0.220.0" \
  "@opentelemetry/context-async-hooks@^2.9.0" "@opentelemetry/exporter-logs-otlp-proto@^0.220.0" \
  "@opentelemetry/exporter-metrics-otlp-proto@^0.220.0" "@opentelemetry/exporter-trace-otlp-proto@^0.220.0" \
  "@opentelemetry/resources@^2.9.0" "@opentelemetry/sdk-logs@^0.220.0" "@opentelemetry/sdk-metrics@^2.9.0" \
  "@opentelemetry/sdk-trace-base@^2.9.0" "@opentelemetry/sdk-trace-node@^2.9.0" >/dev/null
# npm removes packages it did not install, so the unpacked package goes in last.
mkdir -p "$pkg" && cp -r "$tmp/package/." "$pkg/"
mkdir -p node_modules/@oh-my-pi/pi-ai && cp -r "$tmp/ai/package/." node_modules/@oh-my-pi/pi-ai/
rm -rf node_modules/@oh-my-pi/pi-utils/node_modules
sed -i 's/"version": "18.2.10"/"version": "18.2.11"/' node_modules/@oh-my-pi/pi-natives/package.json
cat >>node_modules/@oh-my-pi/pi-natives/native/index.js <<'JS'

// Stubs for the exports the 18.3.4 bundle imports beyond 18.2.10 (interop harness only).
export const ShellFsFileType = {};
export const ShellFsMissing = {};
export const ShellFsOp = {};
export const ShellFsResolve = {};
export class TextPredictor { constructor() { throw new Error("TextPredictor is not available in this harness"); } }
export function appleFmAvailability() { return { available: false, reason: "unsupported" }; }
export function appleFmCancel() {}
export function appleFmGenerate() { throw new Error("Apple foundation models are not available in this harness"); }
JS
node_modules/@oven/bun-linux-x64/bin/bun "$pkg/dist/cli.js" --version
