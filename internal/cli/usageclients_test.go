package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
)

// `omp usage clients` against a real broker: text, --json, and the empty
// case.
func TestUsageClients(t *testing.T) {
	b := startBroker(t, "")
	c := newCLI(t)
	c.useBroker(b)

	r := c.run("", "usage", "clients")
	if r.code != 1 || r.stderr != msgNoClients+"\n" || r.stdout != "" {
		t.Fatalf("empty: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if out := c.ok("", "usage", "clients", "--json"); !strings.Contains(out, "\"clients\": []") {
		t.Fatalf("empty --json:\n%s", out)
	}

	now := time.Now().UnixMilli()
	ctx := context.Background()
	if err := b.client.PostObserved(ctx, api.ClientUsageReport{InstallID: "0123456789abcdef", Hostname: "laptop", App: "omp",
		Entries: []api.ObservedUsageEntry{{At: now, Provider: "anthropic", Model: "claude-sonnet-4-5", Requests: 3,
			InputTokens: 1234, OutputTokens: 2_500_000, CacheReadTokens: 10, CostUsd: 1.234}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.client.PostObserved(ctx, api.ClientUsageReport{InstallID: "idle-install", Entries: []api.ObservedUsageEntry{}}); err != nil {
		t.Fatal(err)
	}
	out := c.ok("", "usage", "clients", "--days", "2")
	want := []string{
		"Per-client token burn since " + time.UnixMilli(now-2*dayMs).UTC().Format("2006-01-02"),
		"",
		"idle-install · last seen",
		"  no usage in this window",
		"",
		"laptop · 01234567 · last seen",
		"  app  provider   requests  input  output  cache r  cache w  total  est cost",
		"  omp  anthropic         3   1.2k    2.5M       10        0   2.5M     $1.23",
		"       total             3                                    2.5M     $1.23",
	}
	got := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("text:\n%s", out)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
	var doc struct {
		GeneratedAt, SinceMs int64
		Clients              []vault.ClientSummary
	}
	if err := json.Unmarshal([]byte(c.ok("", "usage", "clients", "--json", "--days", "0")), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Clients) != 2 || doc.GeneratedAt-doc.SinceMs != 7*dayMs {
		t.Errorf("--json: %+v, want two clients and a 7-day window (non-positive days → 7)", doc)
	}
}

// `omp usage invalidate` prints the reference's lines and sends the
// provider to the broker; a failing broker still exits 0.
func TestUsageInvalidate(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, r.Method+" "+r.URL.Path+" "+string(body))
		mu.Unlock()
		if strings.Contains(string(body), "google") {
			http.Error(w, `{"error":"boom"}`, 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)
	c := newCLI(t)
	c.env["OMP_AUTH_BROKER_URL"], c.env["OMP_AUTH_BROKER_TOKEN"] = srv.URL, "tok"
	if out := c.ok("", "usage", "invalidate"); out != "Invalidated cached usage reports for all providers.\n" {
		t.Errorf("all: %q", out)
	}
	if out := c.ok("", "usage", "invalidate", "--provider", "Anthropic"); out != "Invalidated cached usage reports for provider \"anthropic\".\n" {
		t.Errorf("provider: %q", out)
	}
	r := c.run("", "usage", "invalidate", "-p", "google")
	if r.code != 0 || r.stdout != "Invalidated cached usage reports for provider \"google\".\n" {
		t.Errorf("failing broker: exit %d, %q", r.code, r.stdout)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"POST /v1/usage/stale ", `POST /v1/usage/stale {"provider":"anthropic"}`, `POST /v1/usage/stale {"provider":"google"}`}
	if strings.Join(bodies, "|") != strings.Join(want, "|") {
		t.Errorf("broker saw %q, want %q", bodies, want)
	}
	// Local mode (no broker): the local cache only.
	l := newCLI(t)
	if out := l.ok("", "usage", "invalidate"); out != "Invalidated cached usage reports for all providers.\n" {
		t.Errorf("local: %q", out)
	}
}

// TestUsageHistoryAndClientsBrokerDown: `omp usage --history` and
// `omp usage clients` read records only the broker holds, so with the
// broker stopped — even with a fresh snapshot cache — they exit 1 naming
// the broker, its URL and the fix; a rejected token names the token's
// source instead.
func TestUsageHistoryAndClientsBrokerDown(t *testing.T) {
	b := startBroker(t, "")
	b.upload(t, apiKeyCred("openai", "sk-history"))
	c := newCLI(t)
	c.useBroker(b)
	if r := c.run("", "usage", "--json"); r.code != 0 {
		t.Fatalf("usage (writes the snapshot cache): exit %d %q", r.code, r.stderr)
	}
	for _, args := range [][]string{{"usage", "--history"}, {"usage", "--history", "--json"}, {"usage", "clients"}, {"usage", "clients", "--json"}} {
		if r := c.run("", args...); r.code == 1 && strings.Contains(r.stderr, "unreachable") {
			t.Fatalf("%v with the broker up: exit %d %q", args, r.code, r.stderr)
		}
	}
	b.stop()
	want := "error: auth broker " + b.url + " is unreachable: connection refused; start it (omp auth-broker serve) or check OMP_AUTH_BROKER_URL\n"
	for _, args := range [][]string{{"usage", "--history"}, {"usage", "--history", "--json"}, {"usage", "clients"}, {"usage", "clients", "--json"}} {
		r := c.run("", args...)
		if r.code != 1 || r.stderr != want || r.stdout != "" {
			t.Errorf("%v with the broker down: exit %d\nstdout %q\nstderr %q\nwant   %q", args, r.code, r.stdout, r.stderr, want)
		}
		assertNoSecrets(t, r, b.token)
	}

	// A broker that answers but rejects the token is not an outage.
	other := startBroker(t, "")
	c.env["OMP_AUTH_BROKER_URL"], c.env["OMP_AUTH_BROKER_TOKEN"] = other.url, "not-the-token"
	for _, args := range [][]string{{"usage", "--history"}, {"usage", "clients"}} {
		r := c.run("", args...)
		if r.code != 1 || !strings.Contains(r.stderr, "auth-broker at "+other.url+" rejected the token from env OMP_AUTH_BROKER_TOKEN (401)") {
			t.Errorf("%v with a rejected token: exit %d %q", args, r.code, r.stderr)
		}
		assertNoSecrets(t, r, "not-the-token")
	}
}
