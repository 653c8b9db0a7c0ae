package broker_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
	"github.com/ompgo/omp/pkg/vault/sqlite/sqlitetest"
)

// TestBrokerAdoptsLegacyVault: a sealed vault an earlier omp-go kept at
// agent.db is moved to vault.db when the broker starts, and served.
func TestBrokerAdoptsLegacyVault(t *testing.T) {
	h := newHarness(t)
	kr, _, err := seal.LoadOrCreateKeyFile(filepath.Join(h.dir, "vault.key"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, h.legacyPath(), kr, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Upsert(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-legacy-vault"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	b := h.start(t)
	res, err := b.client.Snapshot(ctx, nil, 0)
	if err != nil || len(res.Snapshot.Credentials) != 1 || res.Snapshot.Credentials[0].Credential.Key != "sk-legacy-vault" {
		t.Fatalf("snapshot after the move: %+v %v", res.Snapshot, err)
	}
	if _, err := os.Stat(h.legacyPath()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("agent.db still there: %v", err)
	}
}

// TestBrokerLeavesReferenceAgentDB: with a reference install's plain
// agent.db beside it, the broker starts on its own vault.db, serves and
// writes, and the reference file stays byte-identical.
func TestBrokerLeavesReferenceAgentDB(t *testing.T) {
	h := newHarness(t)
	sqlitetest.WriteReference(t, h.legacyPath(), sqlitetest.ReferenceSchemaV4, `PRAGMA journal_mode=DELETE`,
		`INSERT INTO auth_credentials (provider, credential_type, data) VALUES ('openai', 'api_key', '{"key":"sk-reference-only"}')`)
	before, err := os.ReadFile(h.legacyPath())
	if err != nil {
		t.Fatal(err)
	}
	b := h.start(t)
	ctx := context.Background()
	if _, err := b.client.Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-ours"}); err != nil {
		t.Fatal(err)
	}
	res, err := b.client.Snapshot(ctx, nil, 0)
	if err != nil || len(res.Snapshot.Credentials) != 1 || res.Snapshot.Credentials[0].Credential.Key != "sk-ours" {
		t.Fatalf("snapshot: %+v %v", res.Snapshot, err)
	}
	b.stop()
	after, err := os.ReadFile(h.legacyPath())
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the reference agent.db changed (err %v)", err)
	}
	if _, err := os.Stat(h.dbPath()); err != nil {
		t.Fatalf("no vault.db: %v", err)
	}
}
