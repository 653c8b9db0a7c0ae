package brokerd_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// TestE2EFleetBlockHealing: a fresh Codex usage report that shows the chat
// meter healthy lifts the credential's chat block once it is older than 5
// minutes (fleet.md §4), and the fleet sees it in the snapshot; the spark
// block, which the report says nothing about, stays.
func TestE2EFleetBlockHealing(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	entries, err := b.client.Upload(ctx, "openai-codex", vault.Credential{Type: vault.TypeOAuth, Access: codexAccess, Refresh: codexRefresh,
		Expires: time.Now().Add(time.Hour).UnixMilli(), AccountID: "acct-codex-e2e", Email: "carol@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	id := entries[0].ID
	// A local-mode writer of the same vault posted both meter blocks ten
	// minutes ago (its clock), so they are past the healing grace.
	kr, err := seal.LoadKeyFile(filepath.Join(h.dir, "vault.key"))
	if err != nil {
		t.Fatal(err)
	}
	past := func() time.Time { return time.Now().Add(-10 * time.Minute) }
	other, err := sqlite.Open(ctx, h.dbPath(), kr, sqlite.Options{Now: past})
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour).UnixMilli()
	if _, err := other.PutBlock(ctx, id, vault.CredentialBlock{ProviderKey: vault.CodexProviderKey, Scope: vault.ScopeShared, UntilMs: until}); err != nil {
		t.Fatal(err)
	}
	other.Close()
	scopes := func() []string {
		res, err := b.client.Snapshot(ctx, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range res.Snapshot.Credentials {
			for _, bl := range e.Blocks {
				out = append(out, bl.Scope)
			}
		}
		return out
	}
	eventually(t, 5*time.Second, "both meter blocks in the snapshot", func() bool { return len(scopes()) == 2 })
	if _, err := b.client.Usage(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the chat block to heal", func() bool {
		s := scopes()
		return len(s) == 1 && s[0] == vault.ScopeSpark
	})
}
