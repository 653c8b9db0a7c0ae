package proxy_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/proxy"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/pick"
)

// anthropicReport is the usage report of account <access>@x with the given
// 7-day used fraction (5 h window at 10 %).
func anthropicReport(access string, weekUsed float64) vault.UsageReport {
	lim := func(id string, used float64) vault.UsageLimit {
		return vault.UsageLimit{ID: id, Label: id, Amount: vault.UsageAmount{UsedFraction: &used, Unit: "percent"}}
	}
	return vault.UsageReport{Provider: "anthropic", Metadata: map[string]any{"email": access + "@x"},
		Limits: []vault.UsageLimit{lim("anthropic:5h", 0.1), lim("anthropic:7d", weekUsed)}}
}

// The gateway chooses by the account policies: the priority-5 account
// while it is outside its reserve, the other one once its remaining usage
// is inside its 20 % reserve. The conversation's session keeps its account
// while no other is outside its reserve.
func TestGatewayAccountPolicies(t *testing.T) {
	up := anthropicOK(t)
	src := &memSource{entries: []vault.Entry{oauthEntry(1, "anthropic", "tok-a"), oauthEntry(2, "anthropic", "tok-b")}}
	prio, reserve := 5.0, 20.0
	s, err := proxy.New(proxy.Options{
		Source: src, Tokens: []string{gatewayToken}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		URLs: func(provider, kind string) string { return up.srv.URL },
		Policies: &pick.Policies{ReservePct: 10, List: []pick.Policy{
			{Provider: "anthropic", Account: pick.Account{Email: "tok-b@x"}, Priority: &prio, ReservePct: &reserve}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(s.Handler())
	t.Cleanup(gw.Close)
	c := openaiClient(gw.URL)

	steps := []struct {
		name       string
		usedA      float64
		usedB      float64
		wantAccess string
	}{
		{"b has the higher priority", 0.2, 0.6, "tok-b"},
		{"b is inside its 20% reserve, a is eligible", 0.2, 0.85, "tok-a"},
		{"both inside their reserves: the session keeps its account", 0.95, 0.85, "tok-a"},
		{"a inside its reserve, b eligible again", 0.95, 0.5, "tok-b"},
	}
	for _, st := range steps {
		src.mu.Lock()
		src.reports = []vault.UsageReport{anthropicReport("tok-a", st.usedA), anthropicReport("tok-b", st.usedB)}
		src.mu.Unlock()
		before := len(up.seen())
		if _, err := c.Chat.Completions.New(context.Background(), chatParams("anthropic/claude-sonnet-4-5")); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := up.seen()[before:]; !slices.Equal(got, []string{st.wantAccess}) {
			t.Errorf("%s: upstream saw %q, want %q", st.name, got, st.wantAccess)
		}
	}
}

// A policy that names no stored account fails the provider's requests
// like any failure to get a credential (502) with a message naming the
// entry; nothing reaches the upstream.
func TestGatewayAccountPolicyNamingNoAccount(t *testing.T) {
	up := anthropicOK(t)
	src := &memSource{entries: []vault.Entry{oauthEntry(1, "anthropic", "tok-a")}}
	s, err := proxy.New(proxy.Options{
		Source: src, Tokens: []string{gatewayToken}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		URLs: func(provider, kind string) string { return up.srv.URL },
		Policies: &pick.Policies{ReservePct: 10, List: []pick.Policy{
			{Provider: "anthropic", Account: pick.Account{Email: "gone@x"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(s.Handler())
	t.Cleanup(gw.Close)
	resp := post(t, gw.URL+"/v1/messages", gatewayToken,
		`{"model":"anthropic/claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`)
	body := readAll(t, resp)
	if resp.StatusCode != 502 || !strings.Contains(body, "auth.accountPolicies[0].account matches no stored OAuth account for anthropic") {
		t.Errorf("status %d body %s", resp.StatusCode, body)
	}
	if n := len(up.seen()); n != 0 {
		t.Errorf("upstream saw %d requests", n)
	}
}
