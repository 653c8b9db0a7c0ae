# omp-go — `make help` lists the targets. `make check` (lint + test) is what CI runs, through .ci/run.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/ompgo/omp/internal/buildinfo.Version=$(VERSION)
BIN := bin
FUZZTIME ?= 60s
# The default minimisation budget (60 s per new input) stalls the slower
# stream fuzzers for most of their run; a bounded count keeps them exploring.
FUZZMINIMIZE ?= 1000x
BENCHTIME ?= 1s
# Where `make run` keeps its state: a throwaway home so it never touches ~/.omp.
RUN_HOME ?= $(CURDIR)/.run
PKGS := ./...
# Pinned; `go run` fetches and caches it, so `make lint` needs no install step.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: help build run test race unit fuzz bench lint vet check clean fleet-bound interop-refgateway-block

help: ## list targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/$$(LITESTREAM_VERSION)/$(LITESTREAM_VERSION)/' | \
	  awk -F':.*## ' '{printf "  %-26s %s\n", $$1, $$2}'

# Static binaries (CGO_ENABLED=0): no dynamic loader and libc start-up for
# every omp command (measured 14 % less CPU for `omp auth-broker status`);
# nothing here needs cgo.
build: ## build bin/omp (the whole CLI), bin/broker, bin/gateway (static)
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/omp ./cmd/omp
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/broker ./cmd/broker
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/gateway ./cmd/gateway

run: build ## start the broker (127.0.0.1:8765, with the offline demo model demo-echo) and the gateway (127.0.0.1:4000) on loopback with a throwaway vault; prints a first request
	@scripts/run.sh "$(RUN_HOME)" "$(BIN)"

vet: ## go vet
	$(GO) vet $(PKGS)

lint: vet ## gofmt + vet + staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(STATICCHECK) $(PKGS)

test: vet tmux ## vet + unit and end-to-end tests with -race
	$(GO) test -race -count=1 -timeout 8m $(PKGS)

race: test ## alias of test (tests always run with -race)

unit: ## quick tests without -race
	$(GO) test -count=1 $(PKGS)

fuzz: ## run every Fuzz target for FUZZTIME each (default 60s)
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)' $$dir/*_test.go 2>/dev/null | awk '{print $$2}'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg; \
	  done; done

bench: ## run the benchmarks
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS)

check: lint test ## what CI runs (.ci/run): gofmt, vet, staticcheck and every test with -race

interop-refgateway-block: build interop-install ## a reference 18.1.21 gateway on our broker meets an upstream 429 and its block reaches our broker's snapshot
	scripts/interop-refgateway-block.sh $(REFERENCE_DIR) $(BIN)

fleet-bound: ## storage bound at full size: 100 000 observed entries from 50 install ids and 10 000 block posts, pruned per round, and one install id posting 30 000 new series in a day; prints vault size, rows and memory
	OMP_FLEET_BOUND_FULL=1 $(GO) test -count=1 -timeout 10m -run '^(TestFleetStorageStaysBounded|TestObservedOneInstallStaysBounded)$$' -v ./pkg/vault/server/

clean: ## remove build output and make-run state
	rm -rf $(BIN) $(RUN_HOME)

REFERENCE_VERSION ?= 18.1.21
REFERENCE_DIR := .interop
.PHONY: interop interop-install interop-diff interop-fleet bench-vault bench-gateway
interop-install: ## install the reference TypeScript omp (+ bun) from npm into .interop/ unless present
	@mkdir -p $(REFERENCE_DIR) && cd $(REFERENCE_DIR) && \
	  { [ -x node_modules/@oven/bun-linux-x64/bin/bun ] && [ -f node_modules/@oh-my-pi/pi-coding-agent/dist/cli.js ]; } || \
	  npm install --no-audit --no-fund @oven/bun-linux-x64 @oh-my-pi/pi-coding-agent@$(REFERENCE_VERSION) >/dev/null

interop: build interop-install ## check the reference TypeScript omp against our broker and our gateway, on one HOME too, the snapshot cache both ways, our agent's session files (compacted ones included) and a fleet block reaching a reference gateway (installs it from npm into .interop/)
	$(GO) build -o $(BIN)/fakeupstream ./tools/fakeupstream
	scripts/interop.sh $(REFERENCE_DIR)
	scripts/interop-refgateway-block.sh $(REFERENCE_DIR) $(BIN)
	scripts/interop-gateway.sh $(REFERENCE_DIR) $(BIN)
	scripts/interop-samehome.sh $(REFERENCE_DIR) $(BIN)
	scripts/interop-agent.sh $(REFERENCE_DIR) $(BIN)
	scripts/interop-rpc.sh $(REFERENCE_DIR) $(BIN) scripts/rpc121-client.ts
	scripts/interop-compact.sh $(REFERENCE_DIR) $(BIN)
	scripts/interop-fleet.sh $(REFERENCE_DIR) $(BIN)
	$(INTEROP_DIFF)

# The reference 18.3.4: its own pins are not on the registry, so
# scripts/interop183-install.sh assembles a runnable copy (see its header and
# the README). The same interop scripts then run against it, plus its
# RpcClient driving our `omp --mode rpc`.
REFERENCE183_DIR := .interop183
.PHONY: interop183 interop183-install
interop183-install: ## assemble the reference omp 18.3.4 (bundle + natives 18.2.x + stubs) into .interop183/ unless present
	scripts/interop183-install.sh $(REFERENCE183_DIR)

interop183: build interop183-install ## the interop scripts against the reference 18.3.4, and its RpcClient (promptAndWait, waitForSettled) driving our omp --mode rpc
	$(GO) build -o $(BIN)/fakeupstream ./tools/fakeupstream
	scripts/interop-rpc.sh $(REFERENCE183_DIR) $(BIN) scripts/rpc183-client.ts
	scripts/interop.sh $(REFERENCE183_DIR)
	scripts/interop-gateway.sh $(REFERENCE183_DIR) $(BIN)
	scripts/interop-samehome.sh $(REFERENCE183_DIR) $(BIN)
	scripts/interop-agent.sh $(REFERENCE183_DIR) $(BIN)
	scripts/interop-compact.sh $(REFERENCE183_DIR) $(BIN)
	scripts/interop-fleet.sh $(REFERENCE183_DIR) $(BIN)
	scripts/interop-refgateway-block.sh $(REFERENCE183_DIR) $(BIN)

interop-fleet: build interop-install ## only the fleet interop: our gateway's usage-limit block reaches a reference gateway through our broker
	$(GO) build -o $(BIN)/fakeupstream ./tools/fakeupstream
	scripts/interop-fleet.sh $(REFERENCE_DIR) $(BIN)

# The differential suite (tools/interopdiff, build tag interop): the same
# request sequences against the reference broker and ours, each with a fake
# token endpoint; every difference must name an accepted difference. Flags after
# -args: -keep (keep homes and logs), -dump (every step of a differing sequence).
INTEROP_DIFF_FLAGS ?=
INTEROP_DIFF = $(GO) test -tags interop -count=1 -v -timeout 5m ./tools/interopdiff \
	-args -ref $(abspath $(REFERENCE_DIR)) -omp $(abspath $(BIN))/omp $(INTEROP_DIFF_FLAGS)
interop-diff: build interop-install ## the differential suite: the same traffic against the reference broker and ours, plus the reference import/migrate/check against ours
	$(INTEROP_DIFF)

# Flags for the bench-vault tool, e.g. BENCH_VAULT_FLAGS='-json' or '-rounds 5 -strict'.
BENCH_VAULT_FLAGS ?=
bench-vault: build ## upload write path: our broker vs the reference broker, interleaved rounds (ours only without npm)
	$(GO) build -o $(BIN)/benchvault ./tools/benchvault
	@$(MAKE) --no-print-directory interop-install || \
	  echo "bench-vault: could not install the reference broker (npm missing or offline); measuring ours only"
	$(BIN)/benchvault -ours $(BIN)/omp -ref $(REFERENCE_DIR) $(BENCH_VAULT_FLAGS)

# The real Claude Code and Codex CLIs through our gateway against a fake
# upstream (scripts/e2e-clis.sh). Needs npm once; not part of `make test`.
E2E_CLIS_DIR := .e2e-clis
.PHONY: e2e-clis e2e-clis-install
e2e-clis-install: ## install @anthropic-ai/claude-code, @openai/codex and @google/gemini-cli from npm into .e2e-clis/ unless present
	@mkdir -p $(E2E_CLIS_DIR) && cd $(E2E_CLIS_DIR) && \
	  { [ -x node_modules/.bin/claude ] && [ -x node_modules/.bin/codex ] && [ -x node_modules/.bin/gemini ]; } || \
	  npm install --no-audit --no-fund @anthropic-ai/claude-code @openai/codex @google/gemini-cli >/dev/null

e2e-clis: build e2e-clis-install ## claude -p, codex exec and gemini -p (also a tool turn) complete a prompt through our gateway (fake upstream; installs the CLIs into .e2e-clis/)
	$(GO) build -o $(BIN)/fakeupstream ./tools/fakeupstream
	scripts/e2e-clis.sh $(E2E_CLIS_DIR) $(BIN)

# The reference pi-catalog's models.json; when set, make generate first
# merges it into pkg/llm/catalog.json (scripts/gencatalog.go).
CATALOG_MODELS ?=
.PHONY: generate
generate: ## regenerate pkg/llm/catalog_gen.go from catalog.json (CATALOG_MODELS=<models.json> refreshes catalog.json first)
	$(if $(CATALOG_MODELS),$(GO) run scripts/gencatalog.go $(CATALOG_MODELS))
	$(GO) generate ./pkg/llm

# Flags for the bench-gateway tool, e.g. BENCH_GATEWAY_FLAGS='-json' or '-rounds 5 -strict'.
BENCH_GATEWAY_FLAGS ?=
bench-gateway: build ## the gateway vs a bare reverse proxy (CPU/request, memory/stream, throughput ratios; 300 KB ≤ 2 ms), local fake Anthropic API
	$(GO) build -o $(BIN)/benchgateway ./tools/benchgateway
	$(BIN)/benchgateway -gateway $(BIN)/gateway $(BENCH_GATEWAY_FLAGS)

# Flags for the bench-startup tool, e.g. BENCH_STARTUP_FLAGS='-runs 50' or '-json'.
BENCH_STARTUP_FLAGS ?=
.PHONY: bench-startup
bench-startup: build ## start-up of bin/omp: `auth-broker status` to first output, `omp -p` to first upstream request (wall, CPU, page faults)
	$(GO) build -o $(BIN)/benchstart ./tools/benchstart
	$(BIN)/benchstart -omp $(BIN)/omp $(BENCH_STARTUP_FLAGS)

.PHONY: bench-scale
bench-scale: build ## one broker and three gateway processes vs one gateway: throughput at concurrency 16 and gateway CPU per request (docs/scale.md)
	$(GO) build -o $(BIN)/benchgateway ./tools/benchgateway
	$(BIN)/benchgateway -scale -gateway $(BIN)/gateway -duration 2s $(BENCH_GATEWAY_FLAGS)

# The interactive mode's end-to-end test runs the real omp in tmux
# (TestInteractiveModeInTmux, part of `make test`; skipped without tmux).
.PHONY: tmux e2e-tui
tmux: ## install tmux (apt-get) if missing
	@command -v tmux >/dev/null 2>&1 || { echo "installing tmux (apt-get)"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null; } || \
	  echo "could not install tmux: the interactive-mode test will be skipped"; }

e2e-tui: tmux ## omp's interactive mode in a real terminal (tmux) against a fake upstream
	$(GO) test -count=1 -v -run TestInteractiveModeInTmux ./internal/cli

.PHONY: e2e-browser
e2e-browser: ## the usage page (GET /usage) in headless chromium against a real broker; installs Debian's chromium if missing
	@command -v chromium >/dev/null 2>&1 || { echo "installing chromium (apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	$(GO) test -tags browser -count=1 -v -run TestUsagePageInBrowser ./tools/e2ebrowser

.PHONY: systemd-tools
systemd-tools: ## install systemd-analyze (Debian package systemd) unless present; deploy/systemd_test.go scores the units with it
	@command -v systemd-analyze >/dev/null || { apt-get update -qq && apt-get install -y -qq systemd >/dev/null; }

# The container image, built without a container engine (tools/ociimage).
IMAGE_TAR ?= $(BIN)/omp-image.tar
.PHONY: image image-test
image: ## OCI image-layout tarball of static broker/gateway/omp binaries, non-root (bin/omp-image.tar; podman load -i / skopeo oci-archive:)
	@mkdir -p $(BIN)/static
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/static/broker ./cmd/broker
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/static/gateway ./cmd/gateway
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/static/omp ./cmd/omp
	$(GO) run ./tools/ociimage -bin $(BIN)/static -out $(IMAGE_TAR) -version $(VERSION) -revision "$$(git rev-parse HEAD 2>/dev/null)"

image-test: image ## build the image and verify it (user, entrypoint, labels, size, static binaries)
	OMP_IMAGE_TAR=$(abspath $(IMAGE_TAR)) $(GO) test -count=1 -run TestBuiltImage -v ./tools/ociimage

# Litestream (continuous replication of the sealed vault), installed from the Go module proxy.
LITESTREAM_VERSION ?= v0.3.13
LITESTREAM := $(BIN)/litestream
.PHONY: litestream-install litestream-test
litestream-install: ## go install Litestream $(LITESTREAM_VERSION) into bin/ unless present (cgo: needs gcc)
	@mkdir -p $(BIN)
	@[ -x $(LITESTREAM) ] || GOBIN=$(abspath $(BIN)) $(GO) install github.com/benbjohnson/litestream/cmd/litestream@$(LITESTREAM_VERSION)

litestream-test: litestream-install ## replicate a serving broker's vault to a file replica, destroy it, restore it, serve the same snapshot
	OMP_LITESTREAM=$(abspath $(LITESTREAM)) $(GO) test -count=1 -run TestLitestreamReplicaRestoresVault -v ./deploy
