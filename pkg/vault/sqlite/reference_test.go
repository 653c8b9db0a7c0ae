package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/sqlite"
	"github.com/ompgo/omp/pkg/vault/sqlite/sqlitetest"
)

// refSchemaV4 is the reference auth schema version 4.
const refSchemaV4 = sqlitetest.ReferenceSchemaV4

const refRowsV4 = `
INSERT INTO auth_credentials (id, provider, credential_type, data, disabled_cause, identity_key, created_at, updated_at) VALUES
 (1, 'anthropic', 'oauth', '{"access":"a1","refresh":"r1","expires":1765503600000,"email":"A@x.io"}', NULL, 'email:a@x.io', 1765000000, 1765000100),
 (2, 'anthropic', 'oauth', '{"access":"a2","refresh":"r2","expires":1765503600000,"email":"b@x.io"}', 'logged out by user', 'email:b@x.io', 1765000000, 1765000200),
 (3, 'openai', 'api_key', '{"key":"sk-A","source":"login"}', NULL, NULL, 1765000000, 1765000000),
 (4, 'openai', 'oauth', 'not json', NULL, NULL, 1765000000, 1765000000),
 (5, 'google-antigravity', 'oauth', '{"access":"a5","refresh":"r5","expires":1,"projectId":"p5","apiEndpoint":"https://x"}', NULL, NULL, 1765000000, 1765000000),
 (7, 'anthropic', 'api_key', '{"key":5}', NULL, NULL, 1765000000, 1765000000),
 (8, 'openai', 'api_key', '{"key":"sk-B"}', '', NULL, 1765000000, 1765000000);
`

func writeRefDB(t *testing.T, stmts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.db")
	db := rawDB(t, path)
	for _, s := range stmts {
		execSQL(t, db, s)
	}
	db.Close()
	return path
}

func refSummary(recs []vault.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = fmt.Sprintf("%d %s %s %s [%s]", r.ID, r.Provider, r.IdentityKey, r.Credential.Refresh+r.Credential.Key, r.DisabledCause)
	}
	return out
}

func TestReadReferenceVersions(t *testing.T) {
	tests := []struct {
		name  string
		stmts []string
		want  []string
	}{
		{"v4 keeps causes and identity keys and skips unparsable rows",
			[]string{refSchemaV4, refRowsV4},
			[]string{
				"1 anthropic email:a@x.io r1 []",
				"2 anthropic email:b@x.io r2 [logged out by user]",
				"3 openai  sk-A []",
				"5 google-antigravity project:p5 r5 []",
				"8 openai  sk-B [disabled]",
			}},
		{"v0 maps the disabled flag to cause disabled and computes identities",
			[]string{`CREATE TABLE auth_credentials (id INTEGER PRIMARY KEY AUTOINCREMENT, provider TEXT NOT NULL,
				credential_type TEXT NOT NULL, data TEXT NOT NULL, disabled INTEGER NOT NULL DEFAULT 0,
				created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
			INSERT INTO auth_credentials VALUES
				(1, 'openai-codex', 'oauth', '{"access":"a1","refresh":"r1","expires":2,"email":"c@x.io","accountId":"acc"}', 0, 1, 1),
				(2, 'openai', 'api_key', '{"key":"sk-A"}', 1, 1, 1);`},
			[]string{"1 openai-codex email:c@x.io r1 []", "2 openai  sk-A [disabled]"}},
		{"v2 without identity_key computes identities",
			[]string{`CREATE TABLE auth_credentials (id INTEGER PRIMARY KEY AUTOINCREMENT, provider TEXT NOT NULL,
				credential_type TEXT NOT NULL, data TEXT NOT NULL, disabled_cause TEXT DEFAULT NULL,
				account_id TEXT, email TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
			INSERT INTO auth_credentials VALUES
				(4, 'github-copilot', 'oauth', '{"access":"a4","refresh":"r4","expires":2,"accountId":"gh1"}', 'deleted by user', 'gh1', NULL, 1, 1);`},
			[]string{"4 github-copilot account:gh1 r4 [deleted by user]"}},
	}
	// Versions 1 and 3 (the reference infers them from the columns), 5–7
	// (tables beside an unchanged auth_credentials; 18.1.21 writes 7) and 8
	// (provider renames only; 18.3 writes it).
	tests = append(tests, []struct {
		name  string
		stmts []string
		want  []string
	}{
		{"v1 has disabled_cause and no identity columns",
			[]string{`CREATE TABLE auth_credentials (id INTEGER PRIMARY KEY AUTOINCREMENT, provider TEXT NOT NULL,
				credential_type TEXT NOT NULL, data TEXT NOT NULL, disabled_cause TEXT DEFAULT NULL,
				created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
			INSERT INTO auth_credentials VALUES
				(2, 'anthropic', 'oauth', '{"access":"a2","refresh":"r2","expires":2,"accountId":"acc-2"}', NULL, 1, 1);`},
			[]string{"2 anthropic account:acc-2 r2 []"}},
		{"v3 has identity_key",
			[]string{`CREATE TABLE auth_credentials (id INTEGER PRIMARY KEY AUTOINCREMENT, provider TEXT NOT NULL,
				credential_type TEXT NOT NULL, data TEXT NOT NULL, disabled_cause TEXT DEFAULT NULL,
				identity_key TEXT DEFAULT NULL, account_id TEXT, email TEXT,
				created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
			INSERT INTO auth_credentials VALUES
				(3, 'anthropic', 'oauth', '{"access":"a3","refresh":"r3","expires":2,"email":"d@x.io"}', NULL, ' email:d@x.io ', NULL, 'd@x.io', 1, 1);`},
			[]string{"3 anthropic email:d@x.io r3 []"}},
		{"v5 adds credential blocks",
			[]string{refSchemaV4, sqlitetest.ReferenceTablesV5, refRowsV4,
				`INSERT INTO auth_credential_blocks VALUES (1, 'anthropic:oauth', '', 4070908800000, 1765000000)`},
			[]string{"1 anthropic email:a@x.io r1 []", "2 anthropic email:b@x.io r2 [logged out by user]",
				"3 openai  sk-A []", "5 google-antigravity project:p5 r5 []", "8 openai  sk-B [disabled]"}},
		{"v6 adds refresh leases",
			[]string{refSchemaV4, sqlitetest.ReferenceTablesV5, sqlitetest.ReferenceTablesV6,
				`INSERT INTO auth_credentials (id, provider, credential_type, data) VALUES
					(6, 'openai-codex', 'oauth', '{"access":"a6","refresh":"r6","expires":2,"email":"c@x.io","orgId":"ws-1","accountId":"ws-1"}')`,
				`INSERT INTO auth_credential_refresh_leases VALUES (6, 'host:1', 4070908800000, 1765000000)`},
			[]string{"6 openai-codex email:c@x.io|org:ws-1 r6 []"}},
		{"v7 (18.1.21) keeps org keys, extension fields and MCP rows",
			[]string{sqlitetest.ReferenceSchemaV7,
				`INSERT INTO auth_credentials (id, provider, credential_type, data, disabled_cause, identity_key) VALUES
					(1, 'anthropic', 'oauth', '{"access":"a1","refresh":"r1","expires":2,"email":"A@B.c","orgId":"org-1","orgName":"Team","authorizedAt":1765000000000}', NULL, 'email:a@b.c|org:org-1'),
					(2, 'anthropic', 'oauth', '{"access":"a2","refresh":"r2","expires":2,"orgId":"org-9"}', NULL, NULL),
					(3, 'zai', 'api_key', '{"key":"sk-z","source":"login"}', 'replaced by oauth login', NULL),
					(4, 'mcp_oauth:profile:default:https://mcp.example/sse', 'oauth', '{"access":"a4","refresh":"r4","expires":2,"tokenUrl":"https://mcp.example/token","clientId":"cid","clientSecret":"cs"}', NULL, NULL)`},
			[]string{"1 anthropic email:a@b.c|org:org-1 r1 []", "2 anthropic org:org-9 r2 []",
				"3 zai  sk-z [replaced by oauth login]", "4 mcp_oauth:profile:default:https://mcp.example/sse  r4 []"}},
		{"v7 singularityapi rows get the names version 8 gives them",
			[]string{sqlitetest.ReferenceSchemaV7,
				`INSERT INTO auth_credentials (id, provider, credential_type, data, disabled_cause) VALUES
					(1, 'singularityapi', 'api_key', '{"key":"sk-sapi-dev1"}', NULL),
					(2, 'singularityapi', 'api_key', '{"key":"sk-lane-2"}', 'disabled via auth-broker'),
					(3, 'singularityapi', 'oauth', '{"access":"a3","refresh":"r3","expires":2}', NULL)`},
			[]string{"1 singularityapi-dev  sk-sapi-dev1 []", "2 singularityapi-tech  sk-lane-2 [disabled via auth-broker]",
				"3 singularityapi-tech  r3 []"}},
		{"v8 (18.3) reads like v7",
			[]string{sqlitetest.ReferenceSchemaV8,
				`INSERT INTO auth_credentials (id, provider, credential_type, data, identity_key) VALUES
					(1, 'singularityapi-dev', 'api_key', '{"key":"sk-sapi-1"}', NULL),
					(2, 'singularityapi-tech', 'api_key', '{"key":"sapi-tech-2"}', NULL),
					(3, 'stepfun', 'api_key', '{"key":"sf-3","source":"login"}', NULL),
					(4, 'anthropic', 'oauth', '{"access":"a4","refresh":"r4","expires":2,"email":"e@x.io"}', 'email:e@x.io')`},
			[]string{"1 singularityapi-dev  sk-sapi-1 []", "2 singularityapi-tech  sapi-tech-2 []", "3 stepfun  sf-3 []",
				"4 anthropic email:e@x.io r4 []"}},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := sqlite.ReadReference(context.Background(), writeRefDB(t, tt.stmts...))
			if err != nil {
				t.Fatal(err)
			}
			if got := refSummary(recs); !slices.Equal(got, tt.want) {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestImportReferenceV7KeepsExtensions imports an 18.1.21 agent.db and
// checks every stored field survives into the vault.
func TestImportReferenceV7KeepsExtensions(t *testing.T) {
	ctx := context.Background()
	recs, err := sqlite.ReadReference(ctx, writeRefDB(t, sqlitetest.ReferenceSchemaV7,
		`INSERT INTO auth_credentials (id, provider, credential_type, data) VALUES
			(1, 'anthropic', 'oauth', '{"access":"a1","refresh":"r1","expires":2,"email":"a@b.c","orgId":"org-1","orgName":"Team","authorizedAt":1765000000000,"foo":{"bar":1}}'),
			(2, 'zai', 'api_key', '{"key":"sk-z","source":"login"}'),
			(3, 'mcp_oauth_abc', 'oauth', '{"access":"a3","refresh":"r3","expires":2,"tokenUrl":"https://mcp.example/token","resource":"https://mcp.example/"}')`))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := newStore(t)
	if _, err := st.ImportRecords(ctx, recs); err != nil {
		t.Fatal(err)
	}
	a := must[vault.Record](t)(st.Get(ctx, 1)).Credential
	if a.OrgID() != "org-1" || a.ExtraString("orgName") != "Team" || string(a.Extra["authorizedAt"]) != "1765000000000" || string(a.Extra["foo"]) != `{"bar":1}` {
		t.Fatalf("oauth extension fields lost: %v", a.Extra)
	}
	if z := must[vault.Record](t)(st.Get(ctx, 2)).Credential; z.Source != vault.SourceLogin {
		t.Fatalf("api key source lost: %+v", z.Source)
	}
	if m := must[vault.Record](t)(st.Get(ctx, 3)).Credential; m.ExtraString("tokenUrl") != "https://mcp.example/token" || m.ExtraString("resource") != "https://mcp.example/" {
		t.Fatalf("mcp refresh material lost: %v", m.Extra)
	}
	wantState(t, st, "1 anthropic email:a@b.c|org:org-1 r1", "2 zai - sk-z", "3 mcp_oauth_abc - r3")
}

func TestReadReferenceRejects(t *testing.T) {
	ctx := context.Background()
	if _, err := sqlite.ReadReference(ctx, filepath.Join(t.TempDir(), "missing.db")); err == nil {
		t.Fatal("missing file accepted")
	}
	if _, err := sqlite.ReadReference(ctx, writeRefDB(t, "CREATE TABLE other (x)")); err == nil {
		t.Fatal("database without auth_credentials accepted")
	}
	junk := filepath.Join(t.TempDir(), "junk.db")
	os.WriteFile(junk, []byte("this is not a database file at all, just some text padding it out"), 0o600)
	if _, err := sqlite.ReadReference(ctx, junk); err == nil {
		t.Fatal("non-database file accepted")
	}
}

func TestImportRecordsPreservesIdsAndIsIdempotent(t *testing.T) {
	ctx := context.Background()
	recs, err := sqlite.ReadReference(ctx, writeRefDB(t, refSchemaV4, refRowsV4))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := newStore(t)
	g := gen(t, st)
	n, err := st.ImportRecords(ctx, recs)
	if err != nil || n != 5 {
		t.Fatalf("ImportRecords = %d, %v; want 5", n, err)
	}
	if gen(t, st) != g+1 {
		t.Fatal("import is not one generation step")
	}
	want := []string{
		"1 anthropic email:a@x.io r1",
		"2 anthropic email:b@x.io r2 [logged out by user]",
		"3 openai - sk-A",
		"5 google-antigravity project:p5 r5",
		"8 openai - sk-B [disabled]",
	}
	wantState(t, st, want...)
	r1 := must[vault.Record](t)(st.Get(ctx, 1))
	if !r1.CreatedAt.Equal(time.Unix(1765000000, 0)) || !r1.UpdatedAt.Equal(time.Unix(1765000100, 0)) {
		t.Fatalf("timestamps %v %v", r1.CreatedAt, r1.UpdatedAt)
	}
	r5 := must[vault.Record](t)(st.Get(ctx, 5))
	if string(r5.Credential.Extra["apiEndpoint"]) != `"https://x"` {
		t.Fatalf("extra fields lost: %v", r5.Credential.Extra)
	}

	// Re-importing upserts the active rows by identity: nothing new.
	n, err = st.ImportRecords(ctx, recs)
	if err != nil || n != 3 {
		t.Fatalf("second ImportRecords = %d, %v; want 3", n, err)
	}
	// …except that upserting the active openai key purges the provider's
	// disabled keys (the 18.1.21 purge rule).
	wantState(t, st, want[:4]...)

	// Ids continue above the imported ones.
	recsAfter := must[[]vault.Record](t)(st.Upsert(ctx, "openai", apiKey("sk-C")))
	if last := recsAfter[len(recsAfter)-1].ID; last != 9 {
		t.Fatalf("next id %d, want 9", last)
	}
}

func TestImportRecordsNeverReusesIds(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", oauth("a@x.io", "r1")))
	if err := st.Disable(ctx, 1, ""); err != nil {
		t.Fatal(err)
	}
	must[[]vault.Record](t)(st.Upsert(ctx, "anthropic", oauth("a@x.io", "r2"))) // id 2, purges 1
	imported := []vault.Record{
		{ID: 1, Provider: "openai", Credential: apiKey("sk-X")},                              // id 1 was used: upserted → new id
		{ID: 1, Provider: "openai", Credential: apiKey("sk-old"), DisabledCause: "disabled"}, // used id, disabled: skipped
		{ID: 6, Provider: "openai", Credential: apiKey("sk-Y")},                              // free: kept
	}
	n, err := st.ImportRecords(ctx, imported)
	if err != nil || n != 2 {
		t.Fatalf("ImportRecords = %d, %v", n, err)
	}
	wantState(t, st, "2 anthropic email:a@x.io r2", "3 openai - sk-X", "6 openai - sk-Y")

	bad := []vault.Record{{ID: 10, Provider: "", Credential: apiKey("k")}}
	if _, err := st.ImportRecords(ctx, bad); vault.ErrorCode(err) != vault.EINVALID {
		t.Fatalf("record without provider: %v", err)
	}
}
