package cli

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault/sqlite/sqlitetest"
)

// refRows are a reference agent.db's credentials: two active OAuth rows,
// one logged-out row, one API key, one row the reference would skip
// (unparsable data).
const refRows = `INSERT INTO auth_credentials (id, provider, credential_type, data, disabled_cause, identity_key, created_at, updated_at) VALUES
 (1, 'anthropic', 'oauth', '{"access":"ref-acc-1","refresh":"ref-rt-1","expires":4070908800000,"email":"ref@x.io"}', NULL, 'email:ref@x.io', 1765000000, 1765000100),
 (2, 'anthropic', 'oauth', '{"access":"ref-acc-2","refresh":"ref-rt-2","expires":4070908800000,"email":"gone@x.io"}', 'logged out by user', 'email:gone@x.io', 1765000000, 1765000200),
 (3, 'openai', 'api_key', '{"key":"sk-ref-openai"}', NULL, NULL, 1765000000, 1765000000),
 (4, 'openai', 'oauth', 'not json', NULL, NULL, 1765000000, 1765000000),
 (7, 'google-antigravity', 'oauth', '{"access":"ref-acc-7","refresh":"ref-rt-7","expires":4070908800000,"projectId":"p7","apiEndpoint":"https://x"}', NULL, NULL, 1765000000, 1765000000);`

var refSecrets = []string{"ref-acc-1", "ref-rt-1", "ref-acc-2", "ref-rt-2", "sk-ref-openai", "ref-acc-7", "ref-rt-7"}

func writeFixtureRefDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.db.plain")
	writeRefDB(t, path, refRows)
	return path
}

func TestImportReferenceDBToBroker(t *testing.T) {
	tests := []struct {
		name      string
		extra     []string
		wantOut   func(db, url string) []string
		wantState []string
	}{
		{"active rows are uploaded", nil,
			func(db, url string) []string {
				return []string{
					"uploaded anthropic: ref@x.io from " + db + " → " + url,
					"uploaded openai: (no identity) from " + db + " → " + url,
					"uploaded google-antigravity: (no identity) from " + db + " → " + url,
				}
			},
			[]string{"anthropic oauth=ref@x.io", "google-antigravity oauth=p7", "openai key=sk-ref-openai"}},
		{"include-disabled uploads logged-out rows too", []string{"--include-disabled"},
			func(db, url string) []string {
				return []string{
					"uploaded anthropic: ref@x.io from " + db + " → " + url,
					"uploaded anthropic: gone@x.io [disabled] from " + db + " → " + url,
					"uploaded openai: (no identity) from " + db + " → " + url,
					"uploaded google-antigravity: (no identity) from " + db + " → " + url,
				}
			},
			[]string{"anthropic oauth=gone@x.io", "anthropic oauth=ref@x.io", "google-antigravity oauth=p7", "openai key=sk-ref-openai"}},
		{"dry run writes nothing", []string{"--dry-run"},
			func(db, url string) []string {
				return []string{
					"Dry run — would import 3 credential(s):",
					"  anthropic: ref@x.io from " + db,
					"  openai: (no identity) from " + db,
					"  google-antigravity: (no identity) from " + db,
				}
			},
			[]string{}},
		{"json plan", []string{"--json", "--dry-run"},
			func(db, url string) []string {
				return []string{`{"dryRun":true,"imported":[],"plan":[` +
					`{"provider":"anthropic","email":"ref@x.io","accountId":null,"expiresAt":4070908800000,"disabled":false,"file":"` + db + `"},` +
					`{"provider":"openai","email":null,"accountId":null,"expiresAt":null,"disabled":false,"file":"` + db + `"},` +
					`{"provider":"google-antigravity","email":null,"accountId":null,"expiresAt":4070908800000,"disabled":false,"file":"` + db + `"}` +
					`],"skipped":[]}`}
			},
			[]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := writeFixtureRefDB(t)
			b := startBroker(t, "")
			c := newCLI(t)
			c.useBroker(b)
			r := c.run("", append([]string{"auth-broker", "import", db}, tt.extra...)...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d stderr %q\n%s", r.code, r.stderr, r.stdout)
			}
			wantLines(t, r.stdout, tt.wantOut(db, b.url)...)
			if got := b.state(t); !slices.Equal(got, tt.wantState) {
				t.Fatalf("broker\ngot  %q\nwant %q", got, tt.wantState)
			}
			assertNoSecrets(t, r, refSecrets...)
		})
	}
}

func TestImportReferenceDBLocallyKeepsIDs(t *testing.T) {
	db := writeFixtureRefDB(t)
	c := newCLI(t)
	r := c.run("", "auth-broker", "import", db, "--include-disabled")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
	wantLines(t, r.stdout,
		"imported anthropic: ref@x.io from "+db,
		"imported anthropic: gone@x.io [disabled] from "+db,
		"imported openai: (no identity) from "+db,
		"imported google-antigravity: (no identity) from "+db,
	)
	assertNoSecrets(t, r, refSecrets...)
	st := c.openVault()
	defer st.Close()
	for id, want := range map[int64]string{1: "anthropic oauth=ref@x.io []", 2: "anthropic oauth=gone@x.io [logged out by user]",
		3: "openai key=sk-ref-openai []", 7: "google-antigravity oauth=p7 []"} {
		rec, err := st.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("id %d: %v", id, err)
		}
		if got := rec.Provider + " " + describeCred(rec.Credential) + " [" + rec.DisabledCause + "]"; got != want {
			t.Errorf("id %d: %q, want %q", id, got, want)
		}
	}
}

// TestReferenceDBBesideVault: a reference install's plain agent.db and the
// Go vault (vault.db) live side by side: logout works on the vault, import
// reads agent.db where it is, and agent.db stays byte-identical
func TestReferenceDBBesideVault(t *testing.T) {
	c := newCLI(t)
	db := c.agentDB()
	writeRefDB(t, db, refRows)
	before := fileBytes(t, db)
	if out := c.ok("", "auth-broker", "logout", "anthropic"); out != "Logged out of anthropic\n" {
		t.Fatalf("logout beside a reference agent.db: %q", out)
	}
	c.ok("", "auth-broker", "import", db)
	if out := c.ok("", "auth-broker", "logout", "anthropic"); out != "Logged out of anthropic\n" {
		t.Fatalf("logout after the import: %q", out)
	}
	want := []string{"anthropic oauth=ref@x.io [logged out by user]", "google-antigravity oauth=p7 []", "openai key=sk-ref-openai []"}
	if got := c.localState(); !slices.Equal(got, want) {
		t.Fatalf("local vault\ngot  %q\nwant %q", got, want)
	}
	if !bytes.Equal(before, fileBytes(t, db)) {
		t.Fatal("the reference agent.db changed")
	}
}

// TestLegacyVaultAtAgentDBIsMoved: a sealed vault an earlier omp-go left
// at agent.db is moved to vault.db by the first command that opens it.
func TestLegacyVaultAtAgentDBIsMoved(t *testing.T) {
	c := newCLI(t)
	c.seed(apiKeyCred("openai", "sk-legacy"))
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Rename(c.vaultDB()+suffix, c.agentDB()+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	c.ok("", "auth-broker", "logout", "openai")
	if _, err := os.Stat(c.agentDB()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("agent.db still there after the move (stat: %v)", err)
	}
	if got, want := c.localState(), []string{"openai key=sk-legacy [logged out by user]"}; !slices.Equal(got, want) {
		t.Fatalf("local vault\ngot  %q\nwant %q", got, want)
	}
}

// TestImportGoVaultIsAClearError: a Go vault (encrypted) is SQLite too, but
// not a reference agent.db; the error names the file once, on one line.
func TestImportGoVaultIsAClearError(t *testing.T) {
	owner := newCLI(t)
	owner.seed(apiKeyCred("openai", "sk-sealed-secret"))
	c := newCLI(t)
	r := c.run("", "auth-broker", "import", owner.vaultDB())
	prefix := "error: read reference vault " + owner.vaultDB() + ": "
	if r.code != 1 || r.stdout != "" || !strings.HasPrefix(r.stderr, prefix) || strings.Count(r.stderr, owner.vaultDB()) != 1 ||
		strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	assertNoSecrets(t, r, "sk-sealed-secret")
}

// TestImportAndMigrateReferenceSchema8 reads an 18.3 agent.db (auth schema
// 8) into a broker twice — `auth-broker import` and `auth-broker migrate
// --from-local` — and locally: SingularityAPI rows keep their split
// providers, and a row still named "singularityapi" is split the way the
// reference's version 8 migration splits it.
func TestImportAndMigrateReferenceSchema8(t *testing.T) {
	const rows = `INSERT INTO auth_credentials (id, provider, credential_type, data) VALUES
	 (1, 'singularityapi-dev', 'api_key', '{"key":"sk-sapi-v8-dev"}'),
	 (2, 'singularityapi-tech', 'api_key', '{"key":"lane-v8-tech"}'),
	 (3, 'singularityapi', 'api_key', '{"key":"sk-sapi-left-over"}'),
	 (4, 'stepfun', 'api_key', '{"key":"sf-v8-key","source":"login"}')`
	secrets := []string{"sk-sapi-v8-dev", "lane-v8-tech", "sk-sapi-left-over", "sf-v8-key"}
	want := []string{"singularityapi-dev key=sk-sapi-left-over", "singularityapi-dev key=sk-sapi-v8-dev",
		"singularityapi-tech key=lane-v8-tech", "stepfun key=sf-v8-key"}

	t.Run("import", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "agent.db")
		sqlitetest.WriteReference(t, db, sqlitetest.ReferenceSchemaV8, rows)
		b := startBroker(t, "")
		c := newCLI(t)
		c.useBroker(b)
		r := c.run("", "auth-broker", "import", db)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("exit %d stderr %q\n%s", r.code, r.stderr, r.stdout)
		}
		if got := b.state(t); !slices.Equal(got, want) {
			t.Fatalf("broker\ngot  %q\nwant %q", got, want)
		}
		assertNoSecrets(t, r, secrets...)
	})
	t.Run("migrate", func(t *testing.T) {
		b := startBroker(t, "")
		c := newCLI(t)
		c.useBroker(b)
		sqlitetest.WriteReference(t, c.agentDB(), sqlitetest.ReferenceSchemaV8, rows)
		r := c.run("", "auth-broker", "migrate", "--from-local")
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("exit %d stderr %q\n%s", r.code, r.stderr, r.stdout)
		}
		// migrate moves one API key per provider: the renamed row is the
		// second singularityapi-dev key.
		if !strings.Contains(r.stdout, "skip [local-sqlite] singularityapi-dev (api key): another local api_key for this provider already planned") {
			t.Errorf("stdout:\n%s", r.stdout)
		}
		if got, want := b.state(t), want[1:]; !slices.Equal(got, want) {
			t.Fatalf("broker\ngot  %q\nwant %q\n%s", got, want, r.stdout)
		}
		assertNoSecrets(t, r, secrets...)
	})
	t.Run("local import keeps ids", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "agent.db")
		sqlitetest.WriteReference(t, db, sqlitetest.ReferenceSchemaV8, rows)
		c := newCLI(t)
		if r := c.run("", "auth-broker", "import", db); r.code != 0 || r.stderr != "" {
			t.Fatalf("exit %d stderr %q\n%s", r.code, r.stderr, r.stdout)
		}
		st := c.openVault()
		defer st.Close()
		rec, err := st.Get(context.Background(), 3)
		if err != nil || rec.Provider != "singularityapi-dev" {
			t.Fatalf("row 3 = %+v, %v; want provider singularityapi-dev", rec.Provider, err)
		}
	})
}
