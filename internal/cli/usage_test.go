package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/cli/usageview"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// fakeAnthropicUsage is a fake Anthropic usage endpoint (GET <base>/api/oauth/usage)
// that answers for one access token.
func fakeAnthropicUsage(t *testing.T, access string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery == "" { // the saved-reset discovery (a query) is not a probe
			calls.Add(1)
		}
		if r.URL.Path != "/api/oauth/usage" || r.Header.Get("Authorization") != "Bearer "+access {
			http.Error(w, `{"error":"nope"}`, http.StatusUnauthorized)
			return
		}
		resets := time.Now().Add(3 * time.Hour).UTC().Format(time.RFC3339)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"five_hour":{"utilization":42,"resets_at":"` + resets + `"},` +
			`"seven_day":{"utilization":81,"resets_at":"` + resets + `"},"account_id":"acct-1","email":"alice@example.com"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

type usageJSON struct {
	GeneratedAt int64 `json:"generatedAt"`
	Reports     []struct {
		Provider string         `json:"provider"`
		Metadata map[string]any `json:"metadata"`
		Limits   []struct {
			ID string `json:"id"`
		} `json:"limits"`
	} `json:"reports"`
	AccountsWithoutUsage []usageview.Account                 `json:"accountsWithoutUsage"`
	DisabledCredentials  []any                               `json:"disabledCredentials"`
	Capacity             map[string][]usageview.CapacityStat `json:"capacity"`
}

func TestUsageBrokerMode(t *testing.T) {
	fake, calls := fakeAnthropicUsage(t, "acc-refresh-alice")
	dead := "http://" + closedAddr(t)
	b := startBrokerURLs(t, "", func(p, kind string) string {
		if p == "anthropic" && kind == config.UsageURL {
			return fake.URL + "/api/oauth"
		}
		return dead
	})
	b.upload(t, oauthCred("anthropic", "alice@example.com", "refresh-alice"), oauthCred("openai-codex", "bob@example.org", "refresh-bob"))
	c := newCLI(t)
	c.useBroker(b)

	out := c.ok("", "usage", "--json")
	if !strings.HasPrefix(out, "{\n  \"generatedAt\": ") {
		t.Errorf("not 2-space indented JSON: %.40q", out)
	}
	var got usageJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	keys := []string{`"generatedAt"`, `"reports"`, `"accountsWithoutUsage"`, `"disabledCredentials"`, `"capacity"`}
	last := -1
	for _, k := range keys {
		i := strings.Index(out, "\n  "+k)
		if i < last {
			t.Errorf("key %s out of order", k)
		}
		last = i
	}
	if len(got.Reports) != 1 || got.Reports[0].Provider != "anthropic" || len(got.Reports[0].Limits) != 2 ||
		got.Reports[0].Metadata["email"] != "alice@example.com" {
		t.Fatalf("reports = %+v", got.Reports)
	}
	// Codex had no usage endpoint answering: listed without usage, by identity.
	if len(got.AccountsWithoutUsage) != 1 || got.AccountsWithoutUsage[0].Email != "bob@example.org" {
		t.Errorf("accountsWithoutUsage = %+v", got.AccountsWithoutUsage)
	}
	if caps := got.Capacity["anthropic"]; len(caps) != 2 || caps[0].Window != "5h" || caps[0].Accounts != 1 {
		t.Errorf("capacity = %+v", got.Capacity)
	}
	if got.DisabledCredentials == nil {
		t.Error("disabledCredentials missing")
	}

	text := c.ok("", "usage")
	checkWidth(t, text)
	for _, want := range []string{"Anthropic — 1 account", "  ● alice@example.com", "Claude 5 Hour", "42.0% used · resets in 2h59m",
		"Openai Codex — 1 account", "  ○ bob@example.org — no usage data", "capacity: 5h → 0.42/1 account used"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b[") {
		t.Error("colour on a non-terminal")
	}
	red := c.ok("", "usage", "--redact", "--provider", "ANTHROPIC")
	if strings.Contains(red, "alice@") || !strings.Contains(red, "  ● al*") || strings.Contains(red, "Codex") {
		t.Errorf("--redact --provider:\n%s", red)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("upstream probed %d times; the broker's cache should answer repeats", n)
	}

	// History: the broker recorded the probe (one row per limit).
	hist := c.ok("", "usage", "--history", "--json", "-d", "2")
	var h struct {
		SinceMs int64 `json:"sinceMs"`
		Entries []struct {
			LimitID string `json:"limitId"`
			Email   string `json:"email"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(hist), &h); err != nil || len(h.Entries) != 2 || h.Entries[0].Email != "alice@example.com" {
		t.Fatalf("history = %v %s", err, hist)
	}
	if d := time.Now().UnixMilli() - h.SinceMs; d < 2*dayMs-60_000 || d > 2*dayMs+60_000 {
		t.Errorf("sinceMs is %d ms ago, want 2 days", d)
	}
	htext := c.ok("", "usage", "--history")
	checkWidth(t, htext)
	if !strings.Contains(htext, "Usage history · last 7d · peak per bucket") || !strings.Contains(htext, "latest 42.0% · peak 42.0% · 1 snapshot") {
		t.Errorf("history text:\n%s", htext)
	}
	r := c.run("", "usage", "--history", "--provider", "zai")
	if r.code != 1 || r.stderr != "No usage history recorded for provider \"zai\" yet. Snapshots accumulate whenever usage is fetched (TUI footer, /usage, omp usage).\n" {
		t.Errorf("empty history: %d %q", r.code, r.stderr)
	}
	// Stored credentials exist, just none for zai (the reference's wording).
	r = c.run("", "usage", "--provider", "zai")
	if r.code != 1 || r.stderr != "No usage data for provider \"zai\". Stored credentials are for providers without a usage endpoint.\n" {
		t.Errorf("no credentials: %d %q", r.code, r.stderr)
	}
	assertNoSecrets(t, c.run("", "usage", "--json"), "refresh-alice", "acc-refresh-alice")

	// A credential the broker disabled shows as a tombstone.
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	entries, err := b.client.Upload(ctx, "anthropic", oauthCred("anthropic", "dave@example.com", "refresh-dave").cred)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Credential.Email == "dave@example.com" {
			if err := b.client.Disable(ctx, e.ID, `oauth refresh failed: 400 {"error":"invalid_grant","error_description":"Grant revoked"}`); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := json.Unmarshal([]byte(c.ok("", "usage", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.DisabledCredentials) != 1 || !strings.Contains(fmt.Sprint(got.DisabledCredentials[0]), "dave@example.com") {
		t.Errorf("disabledCredentials = %v", got.DisabledCredentials)
	}
	if text := c.ok("", "usage"); !strings.Contains(text, "  ✗ dave@example.com — disabled") ||
		!strings.Contains(text, ": Grant revoked (re-login to restore)") {
		t.Errorf("no tombstone line:\n%s", text)
	}
}

func TestUsageLocalMode(t *testing.T) {
	fake, calls := fakeAnthropicUsage(t, "acc-refresh-alice")
	c := newCLI(t)
	// No vault yet: nothing stored, and none created.
	r := c.run("", "usage")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "No credentials found.") {
		t.Fatalf("empty: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if st := c.localState(); len(st) != 0 {
		t.Fatalf("a vault appeared: %v", st)
	}
	c.seed(oauthCred("anthropic", "alice@example.com", "refresh-alice"))
	c.env["OMP_PROVIDER_ANTHROPIC_USAGE_URL"] = fake.URL + "/api/oauth"
	var got usageJSON
	if err := json.Unmarshal([]byte(c.ok("", "usage", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Reports) != 1 || len(got.Reports[0].Limits) != 2 || calls.Load() != 1 {
		t.Fatalf("reports = %+v (calls %d)", got.Reports, calls.Load())
	}
	// Local mode records history in the vault, like the reference.
	if out := c.ok("", "usage", "--history"); !strings.Contains(out, "alice@example.com") {
		t.Errorf("history:\n%s", out)
	}
	r = c.run("", "usage", "bogus")
	if r.code != 1 || !strings.HasPrefix(r.stderr, `error: Expected action to be one of: invalidate, clients; got "bogus"`) {
		t.Errorf("bad action: %d %q", r.code, r.stderr)
	}
}

func TestUsageNoColorAndTerminal(t *testing.T) {
	a := &app{stdout: &strings.Builder{}, environ: []string{"HOME=" + t.TempDir(), "NO_COLOR=1"}}
	if a.colour() {
		t.Error("colour on a strings.Builder")
	}
}

// TestUsageLocalModeRefreshesFirst: an expired OAuth access token is
// refreshed through the provider's token endpoint before the probe, the
// rotated refresh token is written to the vault, and the probe uses the
// fresh access token.
// staleAnthropicHome is a local vault holding one anthropic OAuth
// credential whose access token has expired (refresh token
// "refresh-stale"), with its usage and token endpoints faked: refreshes
// counts the accepted refreshes, calls the usage probes.
func staleAnthropicHome(t *testing.T) (c *cli, refreshes, calls *atomic.Int64) {
	t.Helper()
	usageSrv, calls := fakeAnthropicUsage(t, "acc-fresh")
	refreshes = new(atomic.Int64)
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body["grant_type"] != "refresh_token" || body["refresh_token"] != "refresh-stale" {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		refreshes.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"acc-fresh","refresh_token":"refresh-rotated","expires_in":3600}`))
	}))
	t.Cleanup(tokenSrv.Close)

	c = newCLI(t)
	stale := oauthCred("anthropic", "alice@example.com", "refresh-stale")
	stale.cred.Expires = time.Now().Add(-time.Minute).UnixMilli()
	c.seed(stale)
	c.env["OMP_PROVIDER_ANTHROPIC_USAGE_URL"] = usageSrv.URL + "/api/oauth"
	c.env["OMP_PROVIDER_ANTHROPIC_TOKEN_URL"] = tokenSrv.URL
	return c, refreshes, calls
}

func TestUsageLocalModeRefreshesFirst(t *testing.T) {
	c, refreshes, calls := staleAnthropicHome(t)
	var got usageJSON
	if err := json.Unmarshal([]byte(c.ok("", "usage", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	if refreshes.Load() != 1 || calls.Load() != 1 || len(got.Reports) != 1 {
		t.Fatalf("refreshes %d, probes %d, reports %+v", refreshes.Load(), calls.Load(), got.Reports)
	}
	recs := c.localRecords()
	if len(recs) != 1 || recs[0].Credential.Refresh != "refresh-rotated" || recs[0].Credential.Access != "acc-fresh" {
		t.Fatalf("the rotated token was not stored: %+v", recs)
	}
}

// TestUsageLocalModeLeavesRefreshToTheServingBroker: while a broker holds
// the vault, a local `omp usage` does not refresh an expired credential
// itself (that would spend the refresh token the broker also holds) and
// stores nothing over the broker's row.
func TestUsageLocalModeLeavesRefreshToTheServingBroker(t *testing.T) {
	c, refreshes, _ := staleAnthropicHome(t)

	// The claim a serving broker holds on its vault.
	hold, err := sqlite.HoldVault(c.vaultDB())
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release()

	c.run("", "usage", "--json")
	if n := refreshes.Load(); n != 0 {
		t.Fatalf("omp usage refreshed %d time(s) beside a serving broker", n)
	}
	if recs := c.localRecords(); len(recs) != 1 || recs[0].Credential.Refresh != "refresh-stale" {
		t.Fatalf("omp usage changed the broker's row: %+v", recs)
	}
}

// checkWidth fails on any line wider than the usage text's width or
// carrying a control character.
func checkWidth(t *testing.T, out string) {
	t.Helper()
	for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if w := usageview.Width(l); w > usageview.TermWidth {
			t.Errorf("line %d is %d columns: %q", i+1, w, l)
		}
		if strings.ContainsAny(l, "\x1b\t\r") {
			t.Errorf("line %d has a control character: %q", i+1, l)
		}
	}
}

// TestUsageListsEveryAccount: accounts of providers without a usage probe
// are listed with the reason they have no usage data, while the JSON keeps
// its shape; an empty vault names the login command that exists.
func TestUsageListsEveryAccount(t *testing.T) {
	fake, _ := fakeAnthropicUsage(t, "acc-refresh-alice")
	dead := "http://" + closedAddr(t)
	b := startBrokerURLs(t, "", func(p, kind string) string {
		if p == "anthropic" && kind == config.UsageURL {
			return fake.URL + "/api/oauth"
		}
		return dead
	})
	b.upload(t, oauthCred("anthropic", "alice@example.com", "refresh-alice"),
		apiKeyCred("openai", "sk-openai-1"), apiKeyCred("deepseek", "sk-deepseek-1"), apiKeyCred("openai-codex", "sk-codex-1"))
	c := newCLI(t)
	c.useBroker(b)

	text := c.ok("", "usage")
	checkWidth(t, text)
	for _, want := range []string{"Anthropic — 1 account", "  ● alice@example.com",
		"Openai — 1 account", "  ○ API key — provider has no usage API",
		"Deepseek — 1 account",
		"Openai Codex — 1 account", "  ○ API key — no usage endpoint for API keys"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	var got usageJSON
	if err := json.Unmarshal([]byte(c.ok("", "usage", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	for _, a := range got.AccountsWithoutUsage {
		if a.Provider == "openai" || a.Provider == "deepseek" {
			t.Errorf("accountsWithoutUsage gained %+v; the JSON keeps the reference's list", a)
		}
	}
	if out := c.ok("", "usage", "--provider", "deepseek"); !strings.Contains(out, "  ○ API key — provider has no usage API") {
		t.Errorf("--provider deepseek:\n%s", out)
	}

	empty := newCLI(t)
	r := empty.run("", "usage")
	if r.code != 1 || r.stderr != "No credentials found. Run `omp auth-broker login <provider>` to add an account.\n" {
		t.Errorf("empty vault: %d %q", r.code, r.stderr)
	}
	if r := empty.run("", "usage", "--json"); r.code != 0 {
		t.Errorf("--json on an empty vault exits %d", r.code)
	}
	r = empty.run("", "usage", "-p", "Anthropic")
	if r.code != 1 || r.stderr != "No credentials found for provider \"Anthropic\". Run `omp auth-broker login anthropic` to add an account.\n" {
		t.Errorf("empty vault, one provider: %d %q", r.code, r.stderr)
	}
	if r := empty.run("", "usage", "--help"); !strings.Contains(r.stdout, "Exit status:") {
		t.Errorf("help lacks the exit codes:\n%s", r.stdout)
	}
}

// TestUsageBrokerDownServesTheSnapshotCache: a live `omp usage` writes the
// encrypted snapshot cache (0600, in <config-dir>/cache); with the broker
// stopped the cached accounts are listed without usage data, saying why,
// and the command exits 0. Without a cache the outage is an error.
func TestUsageBrokerDownServesTheSnapshotCache(t *testing.T) {
	fake, _ := fakeAnthropicUsage(t, "acc-refresh-alice")
	dead := "http://" + closedAddr(t)
	b := startBrokerURLs(t, "", func(p, kind string) string {
		if p == "anthropic" && kind == config.UsageURL {
			return fake.URL + "/api/oauth"
		}
		return dead
	})
	b.upload(t, oauthCred("anthropic", "alice@example.com", "refresh-alice"))
	c := newCLI(t)
	c.useBroker(b)

	if text := c.ok("", "usage"); !strings.Contains(text, "42.0% used") {
		t.Fatalf("live usage:\n%s", text)
	}
	path := filepath.Join(c.configDir(), "cache", "auth-broker-snapshot.enc")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no snapshot cache: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("cache mode %v, want 0600", fi.Mode().Perm())
	}
	if data := fileBytes(t, path); !strings.HasPrefix(string(data), "OMPS\x02") || strings.Contains(string(data), "alice@") {
		t.Errorf("cache is not a sealed version 2 file: %.12q", data)
	}

	b.stop()
	r := c.run("", "usage")
	if r.code != 0 || !strings.Contains(r.stdout, "  ○ alice@example.com — usage unavailable: connection refused") {
		t.Fatalf("broker down with a cache: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "accounts listed without usage data") {
		t.Errorf("stderr does not say why usage is missing: %q", r.stderr)
	}
	r = c.run("", "usage", "--json")
	var got usageJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); r.code != 0 || err != nil ||
		len(got.Reports) != 0 || len(got.AccountsWithoutUsage) != 1 || got.AccountsWithoutUsage[0].Email != "alice@example.com" {
		t.Fatalf("broker down, --json: exit %d %v\n%s", r.code, err, r.stdout)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r = c.run("", "usage")
	if r.code != 1 || !strings.Contains(r.stderr, "auth broker "+b.url+" is unreachable: connection refused") || time.Since(start) > 5*time.Second {
		t.Fatalf("broker down without a cache: exit %d after %v, stderr %q", r.code, time.Since(start), r.stderr)
	}
}

// TestUsageLocalInvalidateProbesAgain: `omp usage invalidate` without a
// broker expires the vault's usage cache, so the next `omp usage` (another
// process) probes upstream again instead of serving the cached report.
func TestUsageLocalInvalidateProbesAgain(t *testing.T) {
	fake, calls := fakeAnthropicUsage(t, "acc-refresh-alice")
	c := newCLI(t)
	c.seed(oauthCred("anthropic", "alice@example.com", "refresh-alice"))
	c.env["OMP_PROVIDER_ANTHROPIC_USAGE_URL"] = fake.URL + "/api/oauth"
	c.ok("", "usage", "--json")
	c.ok("", "usage", "--json")
	if n := calls.Load(); n != 1 {
		t.Fatalf("upstream probed %d times before invalidate; want the cache to answer the repeat", n)
	}
	// Another provider's invalidation leaves anthropic's report cached.
	if out := c.ok("", "usage", "invalidate", "--provider", "openai-codex"); out != "Invalidated cached usage reports for provider \"openai-codex\".\n" {
		t.Errorf("invalidate --provider: %q", out)
	}
	c.ok("", "usage", "--json")
	if n := calls.Load(); n != 1 {
		t.Fatalf("upstream probed %d times after another provider's invalidate", n)
	}
	if out := c.ok("", "usage", "invalidate"); out != "Invalidated cached usage reports for all providers.\n" {
		t.Errorf("invalidate: %q", out)
	}
	var got usageJSON
	if err := json.Unmarshal([]byte(c.ok("", "usage", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 || len(got.Reports) != 1 {
		t.Fatalf("after invalidate: upstream probed %d times (want 2), reports %+v", n, got.Reports)
	}
}

// TestUsageBrokerUsageFailureListsAccounts: a broker whose GET /v1/usage
// fails has no reports to show: its accounts are listed without usage
// data, with the reason, and the command exits 0.
func TestUsageBrokerUsageFailureListsAccounts(t *testing.T) {
	b := startBroker(t, "")
	b.upload(t, oauthCred("anthropic", "alice@example.com", "refresh-alice"))
	target, err := url.Parse(b.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/usage" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":"usage store unavailable"}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	c := newCLI(t)
	c.env["OMP_AUTH_BROKER_URL"], c.env["OMP_AUTH_BROKER_TOKEN"] = front.URL, b.token
	r := c.run("", "usage")
	if r.code != 0 || !strings.Contains(r.stdout, "  ○ alice@example.com — usage unavailable: 500 usage store unavailable") ||
		!strings.Contains(r.stderr, `error="500 usage store unavailable"`) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
