// Package sqlitetest holds test fixtures for code that reads the reference
// implementation's plain agent.db: its auth schema and a writer that builds
// such a file. Only tests import it.
package sqlitetest

import (
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// ReferenceSchemaV4 is the reference's auth schema version 4 (broker.md
// §5.1), with the cache and usage tables and an unrelated settings table a
// reference install also has.
const ReferenceSchemaV4 = `
PRAGMA journal_mode=WAL;
CREATE TABLE auth_schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
INSERT INTO auth_schema_version VALUES (1, 4);
CREATE TABLE cache (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at INTEGER NOT NULL);
CREATE INDEX idx_cache_expires ON cache(expires_at);
CREATE TABLE usage_history (
  id INTEGER PRIMARY KEY AUTOINCREMENT, recorded_at INTEGER NOT NULL, provider TEXT NOT NULL,
  account_key TEXT NOT NULL, email TEXT, account_id TEXT, limit_id TEXT NOT NULL, label TEXT NOT NULL,
  window_label TEXT, used_fraction REAL, status TEXT, resets_at INTEGER);
CREATE TABLE auth_credentials (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  provider TEXT NOT NULL,
  credential_type TEXT NOT NULL,
  data TEXT NOT NULL,
  disabled_cause TEXT DEFAULT NULL,
  identity_key TEXT DEFAULT NULL,
  created_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER)),
  updated_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER)));
CREATE INDEX idx_auth_provider ON auth_credentials(provider);
CREATE INDEX idx_auth_provider_identity ON auth_credentials(provider, identity_key) WHERE identity_key IS NOT NULL;
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT);
`

// WriteReference creates a plain SQLite database at path (and its 0700
// parent directory) and runs stmts in order, as the reference writes it:
// plain JSON in auth_credentials.data. Pass ReferenceSchemaV4 first for a
// current reference install.
func WriteReference(t testing.TB, path string, stmts ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: "_pragma=busy_timeout(5000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}
