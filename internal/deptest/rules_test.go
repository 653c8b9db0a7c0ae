package deptest

import (
	"slices"
	"strings"
	"testing"
)

const m = Module + "/"

// TestImportRules enforces the table of docs/architecture.md, "Import rules".
func TestImportRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	rules := []Rule{
		// Domains: no net/http, no database/sql, no third-party module, and
		// nothing in-module but each other.
		{Package: m + "pkg/vault", Bad: []string{"net/http", "database/sql", m + "internal", m + "pkg/llm", m + "cmd"}, ThirdParty: true},
		// The domain's in-module imports are the shared JSON reader and writer.
		{Package: m + "pkg/llm", Bad: []string{"net/http", "database/sql", m + "internal", m + "pkg/vault/", m + "cmd"}, Allow: []string{m + "internal/jsonr", m + "internal/jsonw"}, ThirdParty: true},
		// The gateway never links SQLite or the refresher: it holds no
		// refresh token. The standard library's database/sql itself is linked
		// (without any driver) through the broker server's Prometheus collectors
		// (prometheus/collectors.DBStatsCollector), so the rule names the
		// drivers, not database/sql.
		{Package: m + "cmd/gateway", Bad: []string{m + "pkg/vault/sqlite", m + "pkg/vault/refresh", "modernc.org/sqlite", "github.com/mattn/go-sqlite3", m + "internal/cli"}},
		{Package: m + "internal/gateway", Bad: []string{m + "pkg/vault/sqlite", m + "pkg/vault/refresh", "modernc.org/sqlite", "github.com/mattn/go-sqlite3", m + "internal/cli"}},
		// The gateway talks to the broker through its client: it links the
		// wire types and the client, never the broker's server.
		{Package: m + "cmd/gateway", Bad: []string{m + "pkg/vault/server"}},
		// The standalone daemons are thin mains over the servers: neither
		// they nor the servers reach the omp command tree.
		{Package: m + "cmd/broker", Bad: []string{m + "internal/cli"}},
		{Package: m + "internal/broker", Bad: []string{m + "internal/cli"}},
		{Package: m + "pkg/proxy", Bad: []string{m + "pkg/vault/sqlite", m + "pkg/vault/refresh", "modernc.org/sqlite"}},
		// Shared HTTP plumbing knows no domain: services classify and render
		// their own errors through httpx.Adapter.
		{Package: m + "internal/httpx", Bad: []string{m + "pkg/vault", m + "pkg/"}},
		// The broker's wire types know neither side of the wire; its client
		// knows no server; its server stores through vault.Store only.
		{Package: m + "pkg/vault/api", Bad: []string{m + "pkg/vault/server", m + "pkg/vault/client", m + "pkg/vault/sqlite", m + "pkg/vault/refresh", "github.com/go-chi/", m + "internal", m + "cmd"}},
		{Package: m + "pkg/vault/client", Bad: []string{m + "pkg/vault/server", m + "pkg/vault/sqlite", m + "pkg/vault/refresh", "modernc.org/sqlite", "github.com/go-chi/", m + "cmd"}},
		{Package: m + "pkg/vault/server", Bad: []string{m + "pkg/vault/client", m + "pkg/vault/sqlite", m + "pkg/vault/refresh", "modernc.org/sqlite", m + "cmd"}},
		{Package: m + "pkg/vault/remote", Bad: []string{m + "pkg/vault/sqlite", m + "pkg/vault/refresh", "modernc.org/sqlite"}},
		// The broker's wire types, client and server carry no metrics: those
		// live in server/brokermetrics, which only the broker host imports.
		{Package: m + "pkg/vault/api", Bad: []string{"github.com/prometheus/", "google.golang.org/protobuf"}},
		{Package: m + "pkg/vault/client", Bad: []string{"github.com/prometheus/", "google.golang.org/protobuf"}},
		{Package: m + "pkg/vault/server", Bad: []string{"github.com/prometheus/", "google.golang.org/protobuf"}},
	}
	for _, r := range rules {
		if !Exists(r.Package) {
			t.Logf("skip %s: package does not exist yet", r.Package)
			continue
		}
		t.Run(strings.TrimPrefix(r.Package, m), func(t *testing.T) { r.Check(t) })
	}
}

// TestAdaptersDoNotImportSiblings checks that adapters under pkg/vault/* and
// pkg/llm/* import their domain, internal/httpx and the documented bridges,
// never a sibling adapter.
func TestAdaptersDoNotImportSiblings(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	// Documented bridges: adapter → sibling imports that the architecture allows.
	bridges := map[string][]string{
		m + "pkg/vault/refresh": {m + "pkg/vault/oauth"},
		m + "pkg/vault/usage":   {m + "pkg/vault/oauth"},
		m + "pkg/vault/sqlite":  {m + "pkg/vault/seal"},
		m + "pkg/vault/remote":  {m + "pkg/vault/api", m + "pkg/vault/client", m + "pkg/vault/seal"},
		// Both sides of the broker's wire share its types.
		m + "pkg/vault/client":   {m + "pkg/vault/api"},
		m + "pkg/vault/server":   {m + "pkg/vault/api"},
		m + "pkg/vault/cliproxy": {},
		// The one map from a wire API to its adapter (gateway and agent).
		m + "pkg/llm/upstream": {m + "pkg/llm/anthropic", m + "pkg/llm/openai", m + "pkg/llm/google", m + "pkg/llm/demo"},
	}
	for _, domain := range []string{"pkg/vault", "pkg/llm"} {
		for _, p := range List(t, "./../../"+domain+"/...") {
			if p.ImportPath == m+domain || strings.HasSuffix(p.ImportPath, "test") {
				continue
			}
			for _, imp := range p.Imports {
				if !strings.HasPrefix(imp, m+domain+"/") || strings.HasPrefix(p.ImportPath, imp+"/") || strings.HasPrefix(imp, p.ImportPath+"/") {
					continue // not a sibling adapter (or a parent/child of this package)
				}
				ok := false
				for _, b := range bridges[p.ImportPath] {
					if imp == b || strings.HasPrefix(imp, b+"/") {
						ok = true
					}
				}
				// Shared helper sub-packages of pkg/llm (catalog, internal/json*) serve every adapter.
				if strings.HasPrefix(imp, m+"pkg/llm/catalog") || strings.HasPrefix(imp, m+"pkg/llm/internal/") {
					ok = true
				}
				if !ok {
					t.Errorf("%s imports sibling adapter %s", p.ImportPath, imp)
				}
			}
		}
	}
}

// TestTestHelpersNotImported: packages named *test are test-only.
func TestTestHelpersNotImported(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	for _, p := range List(t, "./../../...") {
		if strings.HasSuffix(p.ImportPath, "test") {
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, m) && strings.HasSuffix(imp, "test") && imp != m+"internal/deptest" {
				t.Errorf("%s (non-test code) imports test helper %s", p.ImportPath, imp)
			}
		}
	}
}

// pkgHelpers are the packages of the module's internal/ that pkg/ may
// import: httpx, the one SSE reader/writer, the one Retry-After parser, the
// one provider identity table, buildinfo (version strings), the embedded
// usage page and the one hand-written JSON reader and writer.
var pkgHelpers = []string{
	m + "internal/httpx", m + "internal/sse", m + "internal/retryafter",
	m + "internal/provider", m + "internal/buildinfo", m + "internal/usagepage",
	m + "internal/jsonr", m + "internal/jsonw",
}

// TestPkgInternalImports: a package under pkg/ imports from the module's
// internal/ only pkgHelpers, and each of those is a leaf that imports
// nothing else of the module, so pkg/ never reaches the CLI, the servers or
// the configuration. The domains pkg/vault and pkg/llm themselves import
// nothing in-module (TestImportRules).
func TestPkgInternalImports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	checked := 0
	for _, p := range List(t, "./../../pkg/...") {
		checked++
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, m+"internal/") && !slices.Contains(pkgHelpers, imp) {
				t.Errorf("%s imports %s", p.ImportPath, imp)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("listed only %d packages under pkg/", checked)
	}
	for _, h := range pkgHelpers {
		for _, dep := range Deps(t, h) {
			if dep != h && strings.HasPrefix(dep, m) {
				t.Errorf("%s, which pkg/ may import, imports %s: it must stay a leaf", h, dep)
			}
		}
	}
}

// TestLLMDoesNotImportUnsafe: no package under pkg/llm, nor the JSON
// reader and writer they share, converts between strings and byte slices without a
// copy. Test files may import unsafe (List reports non-test imports only).
func TestLLMDoesNotImportUnsafe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	llm := append(List(t, "./../../pkg/llm/..."), List(t, "./../../internal/jsonr")...)
	for _, p := range append(llm, List(t, "./../../internal/jsonw")...) {
		for _, imp := range p.Imports {
			if imp == "unsafe" {
				t.Errorf("%s imports unsafe", p.ImportPath)
			}
		}
	}
}

// TestGatewayRuleExercised: the gateway's no-SQLite rule is not skipped for
// want of a package, checks the real wiring (cmd/gateway links
// internal/gateway, pkg/proxy and the remote store) and would catch the
// edge it forbids (the broker, which does link SQLite, fails it).
func TestGatewayRuleExercised(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	for _, p := range []string{m + "cmd/gateway", m + "internal/gateway", m + "pkg/proxy"} {
		if !Exists(p) {
			t.Fatalf("%s does not exist: the gateway import rule would be skipped", p)
		}
	}
	deps := map[string]bool{}
	for _, d := range Deps(t, m+"cmd/gateway") {
		deps[d] = true
	}
	for _, want := range []string{m + "internal/gateway", m + "pkg/proxy", m + "pkg/vault/remote", m + "pkg/vault/api", m + "pkg/vault/client"} {
		if !deps[want] {
			t.Errorf("cmd/gateway does not link %s: the rule checks a stub", want)
		}
	}
	linksSQLite := false
	for _, d := range Deps(t, m+"cmd/broker") {
		if d == "modernc.org/sqlite" {
			linksSQLite = true
		}
	}
	if !linksSQLite {
		t.Error("cmd/broker does not link modernc.org/sqlite: the rule's forbidden path name is stale")
	}
}
