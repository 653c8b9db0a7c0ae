package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/server"
)

const day = int64(86_400_000)

func (e *env) record(entries ...vault.UsageHistoryEntry) {
	e.t.Helper()
	if err := e.store.RecordUsage(context.Background(), entries); err != nil {
		e.t.Fatal(err)
	}
}

func histEntry(at int64, provider, limit string, f float64) vault.UsageHistoryEntry {
	return vault.UsageHistoryEntry{RecordedAt: at, Provider: provider, AccountKey: "oauth|email:a@b.c", Email: "a@b.c",
		LimitID: limit, Label: limit, UsedFraction: &f}
}

func TestUsageHistoryQuery(t *testing.T) {
	e := newEnv(t)
	now := e.clk.Now().UnixMilli()
	e.record(histEntry(now-10*day, "anthropic", "anthropic:5h", 0.1),
		histEntry(now-2*day, "anthropic", "anthropic:5h", 0.2),
		histEntry(now-day, "openai-codex", "openai-codex:primary", 0.3))
	for _, tc := range []struct{ query, want string }{
		{"", "0.1,0.2,0.3"},
		{"?days=7", "0.2,0.3"},
		{"?days=1", "0.3"},
		{"?days=7&provider=anthropic", "0.2"},
		{"?provider=", "0.1,0.2,0.3"},                      // empty = absent
		{"?provider=Anthropic", ""},                        // exact match
		{"?sinceMs=abc", "0.1,0.2,0.3"},                    // no digits → 0
		{"?days=1&sinceMs=0", "0.1,0.2,0.3"},               // sinceMs wins
		{"?sinceMs=" + itoa(now-2*day) + "xyz", "0.2,0.3"}, // parseInt prefix
	} {
		st, _, body := e.get("/v1/usage/history" + tc.query)
		if st != 200 {
			t.Fatalf("%s: %d %s", tc.query, st, body)
		}
		h, err := e.client.UsageHistory(context.Background(), 0, "")
		if err != nil || len(h.Entries) != 3 {
			t.Fatalf("client: %v %d", err, len(h.Entries))
		}
		if got := fractions(t, body); got != tc.want {
			t.Errorf("%s: fractions %q, want %q", tc.query, got, tc.want)
		}
		if !strings.HasPrefix(body, `{"generatedAt":1765500000000,"entries":[`) || strings.Contains(body, "truncated") {
			t.Errorf("%s: body %s", tc.query, body)
		}
	}
	if !strings.Contains(e.logs.String(), "auth-broker usage history served") {
		t.Error("no log line")
	}
}

func TestUsageHistoryBadDays(t *testing.T) {
	e := newEnv(t)
	for _, q := range []string{"0", "-1", "401", "abc", "1.5", ""} {
		st, _, body := e.get("/v1/usage/history?days=" + q)
		if st != 400 || !strings.Contains(body, "days must be an integer from 1 to 400") {
			t.Errorf("days=%q: %d %s", q, st, body)
		}
	}
	if st, _, _ := e.do(http.MethodGet, "/v1/usage/history", "", ""); st != 401 {
		t.Errorf("without bearer: %d", st)
	}
}

func TestUsageHistoryTruncated(t *testing.T) {
	e := newEnv(t)
	now := e.clk.Now().UnixMilli()
	var batch []vault.UsageHistoryEntry
	for i := range server.MaxHistoryEntries + 5 {
		// one series per entry so hourly downsampling keeps every row
		batch = append(batch, histEntry(now-int64(server.MaxHistoryEntries+5-i)*1000, "anthropic", "l"+itoa(int64(i)), 0.5))
	}
	e.record(batch...)
	h, err := e.client.UsageHistory(context.Background(), 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if !h.Truncated || len(h.Entries) != server.MaxHistoryEntries || h.Entries[0].LimitID != "l5" {
		t.Fatalf("truncated=%v n=%d first=%s", h.Truncated, len(h.Entries), h.Entries[0].LimitID)
	}
}

func TestUsageHistoryClient404(t *testing.T) {
	e := newEnv(t)
	// A reference broker before 17.1.2 has no route: our client surfaces the 404.
	_, err := client.New(e.ts.URL+"/nope", testToken, nil).UsageHistory(context.Background(), 0, "")
	var be *client.Error
	if !errors.As(err, &be) || be.Status != 404 {
		t.Fatalf("err = %v", err)
	}
}

func TestUsagePageNoAuth(t *testing.T) {
	e := newEnv(t)
	st, h, body := e.do(http.MethodGet, "/usage", "", "")
	if st != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(body, "<title>omp usage</title>") {
		t.Fatalf("page = %d %s", st, h.Get("Content-Type"))
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "connect-src 'self'") {
		t.Errorf("csp = %q", h.Get("Content-Security-Policy"))
	}
	// No external resource: every URL the page names is relative.
	for _, bad := range []string{"http://", "https://", "//cdn", "src=\""} {
		if i := strings.Index(body, bad); i >= 0 && !strings.Contains(body[i:min(len(body), i+40)], "www.w3.org/2000/svg") {
			t.Errorf("page references %q", body[i:min(len(body), i+40)])
		}
	}
	// Only GET /usage is open: the data routes still need the bearer.
	if st, _, _ := e.do(http.MethodGet, "/v1/usage", "", ""); st != 401 {
		t.Errorf("/v1/usage without bearer = %d", st)
	}
	if st, _, _ := e.do(http.MethodPost, "/usage", "", ""); st != 401 {
		t.Errorf("POST /usage without bearer = %d", st)
	}
}

// fractions lists the usedFraction of every entry of a history body.
func fractions(t *testing.T, body string) string {
	t.Helper()
	var h struct {
		Entries []vault.UsageHistoryEntry `json:"entries"`
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range h.Entries {
		out = append(out, strconv.FormatFloat(*e.UsedFraction, 'f', -1, 64))
	}
	return strings.Join(out, ",")
}

func TestDisabledCredentials(t *testing.T) {
	e := newEnv(t)
	a := e.upsert("anthropic", oauthCred("a@b.c", e.clk.Now().UnixMilli()+3_600_000))
	k := e.upsert("zai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-secret-zai"})
	e.upsert("anthropic", oauthCred("live@b.c", e.clk.Now().UnixMilli()+3_600_000))
	for _, id := range []int64{a.ID, k.ID} {
		if st, _, body := e.post("/v1/credential/"+itoa(id)+"/disable", `{"cause":"oauth refresh failed: invalid_grant"}`); st != 200 {
			t.Fatalf("disable: %d %s", st, body)
		}
	}
	st, _, body := e.get("/v1/credentials/disabled")
	want := `{"generatedAt":1765500000000,"disabled":[{"id":` + itoa(a.ID) + `,"provider":"anthropic","type":"oauth","cause":"oauth refresh failed: invalid_grant","email":"a@b.c","disabledAtMs":1765500000000},` +
		`{"id":` + itoa(k.ID) + `,"provider":"zai","type":"api_key","cause":"oauth refresh failed: invalid_grant","disabledAtMs":1765500000000}]}`
	if st != 200 || body != want {
		t.Fatalf("disabled = %d %s\nwant %s", st, body, want)
	}
	if strings.Contains(body, "secret") || strings.Contains(body, "refresh-") {
		t.Fatal("token material in tombstones")
	}
	got, err := e.client.DisabledCredentials(context.Background(), "zai")
	if err != nil || len(got) != 1 || got[0].Provider != "zai" {
		t.Fatalf("client: %+v %v", got, err)
	}
	// A broker before 17.1.4 has no route: an empty list.
	got, err = client.New(e.ts.URL+"/old", testToken, nil).DisabledCredentials(context.Background(), "")
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("old broker: %+v %v", got, err)
	}
}
