package vault_test

import (
	"slices"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

func TestSharedProjectionFoldsCodexMeters(t *testing.T) {
	bs := []vault.CredentialBlock{
		{ProviderKey: "openai-codex:oauth", Scope: "spark", UntilMs: 900, UpdatedAtMs: 1000},
		{ProviderKey: "openai-codex:oauth", Scope: "chat", UntilMs: 600, UpdatedAtMs: 2000},
		{ProviderKey: "openai-codex:oauth", Scope: "model-policy:gpt-x", UntilMs: 500},
		{ProviderKey: "anthropic:oauth", Scope: "chat", UntilMs: 100}, // not Codex: unchanged
	}
	want := []vault.CredentialBlock{
		{ProviderKey: "anthropic:oauth", Scope: "chat", UntilMs: 100},
		{ProviderKey: "openai-codex:oauth", Scope: "model-policy:gpt-x", UntilMs: 500},
		{ProviderKey: "openai-codex:oauth", Scope: "shared", UntilMs: 900, UpdatedAtMs: 2000},
	}
	if got := vault.SharedProjection(bs); !slices.Equal(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if got := vault.LiveBlocks(bs, 600); len(got) != 1 || got[0].Scope != "spark" {
		t.Fatalf("live at 600: %+v", got)
	}
	if vault.LiveBlocks(bs, 1000) != nil {
		t.Fatal("all expired: want nil")
	}
}

func TestNormalizeClientUsage(t *testing.T) {
	now := int64(10_000_000_000)
	long := string(make([]byte, 300))
	r := vault.NormalizeClientUsage(vault.ClientUsageReport{
		InstallID: "  id  ", Hostname: "h\u00e9" + long, App: " omp ",
		Entries: []vault.ObservedUsage{
			{At: 1, Provider: " p ", Model: "m", Requests: -1, InputTokens: -5, CostUsd: -1},
			{At: now - 1000, Requests: 2, CostUsd: 0.5},
			{At: now + 10*60_000},
		},
	}, now)
	if r.InstallID != "id" || r.App != "omp" || len(r.Hostname) > vault.MaxObservedIdentityLen {
		t.Fatalf("identities %q %q %d", r.InstallID, r.App, len(r.Hostname))
	}
	e := r.Entries
	if e[0].At != now || e[0].Provider != "p" || e[0].Requests != 0 || e[0].InputTokens != 0 || e[0].CostUsd != 0 {
		t.Fatalf("entry 0 %+v", e[0])
	}
	if e[1].At != now-1000 || e[1].Requests != 2 || e[1].CostUsd != 0.5 || e[2].At != now {
		t.Fatalf("entries %+v", e)
	}
	if got := vault.CutUTF8("aé", 2); got != "a" {
		t.Fatalf("CutUTF8 cut a rune: %q", got)
	}
}
