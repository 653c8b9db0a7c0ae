package broker_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/syncbuf"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/remote"
	"github.com/ompgo/omp/pkg/vault/vaulttest"
)

// An account pool against the real broker: the remote store
// holds only pooled OAuth rows (API keys always), an entry frame of a row
// outside the pool never lands, and one warning names the pool key that
// matches no broker credential.
func TestRemoteAppliesAccountPool(t *testing.T) {
	b := newHarness(t).start(t)
	ctx := context.Background()
	for _, email := range []string{"in@example.com", "out@example.com"} {
		if _, err := b.client.Upload(ctx, "anthropic", vaulttest.OAuth("anthropic", email).Credential()); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "pool.json")
	if err := os.WriteFile(path, []byte(`{"anthropic":["email:in@example.com","email:typo@example.com"],"openai-codex":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	pool, err := remote.LoadPool(path)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncbuf.Buffer{}
	rs := startRemote(t, b, remote.Options{Pool: pool, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	eventually(t, 5*time.Second, "first snapshot", func() bool { _, err := rs.List(ctx, ""); return err == nil })

	keys := func() []string {
		es, _ := rs.List(ctx, "")
		var out []string
		for _, e := range es {
			out = append(out, e.Provider+"/"+e.IdentityKey)
		}
		return out
	}
	if got := keys(); len(got) != 1 || got[0] != "anthropic/email:in@example.com" {
		t.Fatalf("held %v, want only anthropic/email:in@example.com", got)
	}
	// A key and a codex account uploaded later: the key arrives, the codex
	// row ([] in the pool) never does.
	if _, err := b.client.Upload(ctx, "openai-codex", vaulttest.OAuth("openai-codex", "codex@example.com").Credential()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-pool"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, "API key visible", func() bool { return len(keys()) == 2 })
	if es, _ := rs.List(ctx, "openai-codex"); len(es) != 0 {
		t.Errorf("codex rows held despite an empty pool list: %d", len(es))
	}
	out := logs.String()
	if want := "account pool for anthropic: no broker credential for email:typo@example.com"; !strings.Contains(out, want) {
		t.Errorf("logs lack %q:\n%s", want, out)
	}
	if strings.Contains(out, "account pool for openai-codex") {
		t.Errorf("an empty pool list ([]) must be silent:\n%s", out)
	}
}
