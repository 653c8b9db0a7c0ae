package broker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// TestE2EFleetBlockHealing: a fresh Codex usage report that shows the chat
// meter healthy lifts the credential's chat block once it is older than 5
// minutes, and the fleet sees it in the snapshot; the spark
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

// TestE2EFleetAntigravityHealing: Antigravity blocks heal per backend
// counter: a fresh report with Claude headroom lifts the
// counter:anthropic block older than 5 minutes, keeps counter:google (its
// counter is exhausted), and keeps a fresh counter:anthropic block of
// another credential (the "not before updated_at + 300000" rule).
func TestE2EFleetAntigravityHealing(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	upload := func(n string) int64 {
		entries, err := b.client.Upload(ctx, "google-antigravity", vault.Credential{Type: vault.TypeOAuth, Access: "antigravity-e2e-access-" + n,
			Refresh: "antigravity-e2e-refresh-" + n, Expires: time.Now().Add(time.Hour).UnixMilli(), ProjectID: "proj-antigravity-e2e",
			Email: "ag" + n + "@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Credential.Email == "ag"+n+"@example.com" {
				return e.ID
			}
		}
		t.Fatalf("upload %s: no entry", n)
		return 0
	}
	oldID, freshID := upload("1"), upload("2")
	kr, err := seal.LoadKeyFile(filepath.Join(h.dir, "vault.key"))
	if err != nil {
		t.Fatal(err)
	}
	key := vault.ProviderKey("google-antigravity", vault.TypeOAuth)
	until := time.Now().Add(time.Hour).UnixMilli()
	put := func(at func() time.Time, id int64, scopes ...string) {
		st, err := sqlite.Open(ctx, h.dbPath(), kr, sqlite.Options{Now: at})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for _, sc := range scopes {
			if _, err := st.PutBlock(ctx, id, vault.CredentialBlock{ProviderKey: key, Scope: sc, UntilMs: until}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A local-mode writer posted these ten minutes ago (its clock) …
	put(func() time.Time { return time.Now().Add(-10 * time.Minute) }, oldID, "counter:anthropic", "counter:google")
	// … and this one just now.
	put(time.Now, freshID, "counter:anthropic")
	blocks := func() map[int64][]string {
		res, err := b.client.Snapshot(ctx, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64][]string{}
		for _, e := range res.Snapshot.Credentials {
			for _, bl := range e.Blocks {
				out[e.ID] = append(out[e.ID], bl.Scope)
			}
		}
		return out
	}
	eventually(t, 5*time.Second, "three Antigravity blocks in the snapshot", func() bool {
		bs := blocks()
		return len(bs[oldID]) == 2 && len(bs[freshID]) == 1
	})
	if _, err := b.client.Usage(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the old Claude counter block to heal", func() bool {
		bs := blocks()
		return fmt.Sprint(bs[oldID]) == "[counter:google]" && fmt.Sprint(bs[freshID]) == "[counter:anthropic]"
	})
	if n := h.up.usageCalls(antigravityPath); n < 2 {
		t.Fatalf("antigravity usage fetched %d times, want one per credential", n)
	}
}
