package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
	"github.com/ompgo/omp/pkg/vault/client"
)

// TestObservedAttributionNegotiated: the broker announces
// observed-credential-id only to a snapshot request that lists it; the Go
// client sends credentialId only after that answer; the broker keeps an id
// only when it names a credential of the entry's provider; per-account
// rows go only to a reader that asks, and a reference-shaped request gets
// the byte-identical answer of a broker that never saw a credential id.
func TestObservedAttributionNegotiated(t *testing.T) {
	ctx := context.Background()
	e, ref := newEnv(t), newEnv(t) // ref: the same usage, never attributed
	var a, b, key vault.Record
	for _, x := range []*env{e, ref} {
		a = x.upsert("anthropic", oauthCred("alice@x.y", x.clk.Now().UnixMilli()+3_600_000))
		b = x.upsert("anthropic", oauthCred("bob@x.y", x.clk.Now().UnixMilli()+3_600_000))
		key = x.upsert("openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-secret-key"})
	}
	// The announcement follows the request's capabilities.
	for _, tc := range []struct {
		caps string
		want bool
	}{{"", false}, {"codex-meter-block-scopes", false}, {client.Capabilities, true}, {" foo ,observed-credential-id", true}} {
		var hdr []string
		if tc.caps != "" {
			hdr = []string{api.CapabilitiesHeader, tc.caps}
		}
		_, h, _ := e.get("/v1/snapshot", hdr...)
		if got := h.Get(api.CapabilitiesHeader) == api.ObservedCredentialIDs; got != tc.want {
			t.Fatalf("caps %q: announced %v (%q)", tc.caps, got, h.Get(api.CapabilitiesHeader))
		}
	}
	now := e.clk.Now().UnixMilli()
	entry := func(provider, model string, cred, in int64) api.ObservedUsageEntry {
		return api.ObservedUsageEntry{At: now, Provider: provider, Model: model, Requests: 1, InputTokens: in, CredentialID: cred}
	}
	report := api.ClientUsageReport{InstallID: "gw-1", Hostname: "gw", App: "gateway", Entries: []api.ObservedUsageEntry{
		entry("anthropic", "m1", a.ID, 100), entry("anthropic", "m1", b.ID, 20), entry("anthropic", "m2", a.ID, 3),
		entry("anthropic", "m1", key.ID, 4), // a credential of another provider: ignored
		entry("openai", "gpt", 999_999, 5),  // no such credential: ignored
		entry("openai", "gpt", key.ID, 60),  // kept
	}}
	// Before any announcement the client sends the reference entry shape.
	if e.client.ObservedCredentialIDs() {
		t.Fatal("announced before any snapshot")
	}
	if err := e.client.PostObserved(ctx, api.ClientUsageReport{InstallID: "early", Entries: []api.ObservedUsageEntry{entry("anthropic", "m1", a.ID, 1)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Snapshot(ctx, nil, 0); err != nil {
		t.Fatal(err)
	}
	if !e.client.ObservedCredentialIDs() {
		t.Fatal("the Go broker's announcement was not noted")
	}
	if err := e.client.PostObserved(ctx, report); err != nil {
		t.Fatal(err)
	}
	// ref gets the same report from a client that never saw an announcement.
	if err := ref.client.PostObserved(ctx, api.ClientUsageReport{InstallID: "early", Entries: []api.ObservedUsageEntry{entry("anthropic", "m1", a.ID, 1)}}); err != nil {
		t.Fatal(err)
	}
	if err := ref.client.PostObserved(ctx, report); err != nil {
		t.Fatal(err)
	}
	// An id of the wrong kind is ignored, not a 400.
	if status, _, body := e.post("/v1/usage/observed", `{"installId":"x","entries":[{"at":1,"provider":"p","model":"m","requests":1,"inputTokens":1,"outputTokens":0,"cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":0,"credentialId":"3"}]}`); status != 200 {
		t.Fatalf("string credentialId: %d %s", status, body)
	}
	if err := ref.client.PostObserved(ctx, api.ClientUsageReport{InstallID: "x", Entries: []api.ObservedUsageEntry{{At: 1, Provider: "p", Model: "m", Requests: 1, InputTokens: 1}}}); err != nil {
		t.Fatal(err)
	}

	// A reference-shaped request: byte for byte what ref answers.
	_, _, got := e.get("/v1/usage/clients?sinceMs=0")
	_, _, want := ref.get("/v1/usage/clients?sinceMs=0")
	if got != want || strings.Contains(got, "credentialId") || strings.Contains(got, "account") {
		t.Fatalf("reference shape differs:\n got %s\nwant %s", got, want)
	}
	// Per-account rows for the Go client.
	u, err := e.client.UsageClients(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var gw *vault.ClientSummary
	for i := range u.Clients {
		if u.Clients[i].InstallID == "gw-1" {
			gw = &u.Clients[i]
		}
	}
	if gw == nil {
		t.Fatalf("no gw-1 in %+v", u.Clients)
	}
	type row struct {
		provider, account string
		cred, in          int64
	}
	var rows []row
	for _, p := range gw.Providers {
		rows = append(rows, row{p.Provider, p.Account, p.CredentialID, p.InputTokens})
	}
	wantRows := []row{{"anthropic", "alice@x.y", a.ID, 103}, {"openai", "api_key #" + itoa(key.ID), key.ID, 60},
		{"anthropic", "bob@x.y", b.ID, 20}, {"openai", "", 0, 5}, {"anthropic", "", 0, 4}}
	if len(rows) != len(wantRows) {
		t.Fatalf("rows %+v, want %+v", rows, wantRows)
	}
	for i := range rows {
		if rows[i] != wantRows[i] {
			t.Fatalf("rows %+v, want %+v", rows, wantRows)
		}
	}
	// The early report went out before the announcement: not attributed.
	for _, c := range u.Clients {
		if c.InstallID == "early" && (len(c.Providers) != 1 || c.Providers[0].CredentialID != 0) {
			t.Fatalf("early report attributed: %+v", c.Providers)
		}
	}
}
