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

// ReferenceSchemaV4 is the reference's auth schema version 4, with the cache
// and usage tables and an unrelated settings table a reference install also
// has.
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

// ReferenceTablesV5, V6 and V7 are what the reference's migrations to auth
// schema versions 5–7 add to a version 4 database (18.x: credential blocks,
// refresh leases, change tracking with its triggers on auth_credentials, the
// block mirror guard, clients and client usage). auth_credentials itself is
// unchanged. Apply them in order after ReferenceSchemaV4.
const (
	ReferenceTablesV5 = `
CREATE TABLE auth_credential_blocks (
  credential_id INTEGER NOT NULL, provider_key TEXT NOT NULL, block_scope TEXT NOT NULL DEFAULT '',
  blocked_until_ms INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  PRIMARY KEY (credential_id, provider_key, block_scope));
CREATE INDEX idx_auth_credential_blocks_expires ON auth_credential_blocks(blocked_until_ms);
UPDATE auth_schema_version SET version = 5;
`
	ReferenceTablesV6 = `
CREATE TABLE auth_credential_refresh_leases (
  credential_id INTEGER PRIMARY KEY, owner TEXT NOT NULL, expires_at_ms INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE INDEX idx_auth_credential_refresh_leases_expires ON auth_credential_refresh_leases(expires_at_ms);
UPDATE auth_schema_version SET version = 6;
`
	ReferenceTablesV7 = `
CREATE TABLE auth_change_revision (id INTEGER PRIMARY KEY CHECK (id = 1), revision INTEGER NOT NULL);
INSERT OR IGNORE INTO auth_change_revision (id, revision) VALUES (1, 0);
CREATE TRIGGER auth_change_revision_auth_credentials_insert AFTER INSERT ON auth_credentials
BEGIN UPDATE auth_change_revision SET revision = revision + 1 WHERE id = 1; END;
CREATE TRIGGER auth_change_revision_auth_credentials_update AFTER UPDATE ON auth_credentials
BEGIN UPDATE auth_change_revision SET revision = revision + 1 WHERE id = 1; END;
CREATE TRIGGER auth_change_revision_auth_credentials_delete AFTER DELETE ON auth_credentials
BEGIN UPDATE auth_change_revision SET revision = revision + 1 WHERE id = 1; END;
CREATE TABLE auth_credential_block_mirror_guard (credential_id INTEGER PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE clients (install_id TEXT PRIMARY KEY, hostname TEXT, first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL);
CREATE TABLE client_usage (
  id INTEGER PRIMARY KEY AUTOINCREMENT, recorded_at INTEGER NOT NULL, install_id TEXT NOT NULL,
  app TEXT NOT NULL DEFAULT '', provider TEXT NOT NULL, model TEXT NOT NULL, requests INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cache_read_tokens INTEGER NOT NULL,
  cache_write_tokens INTEGER NOT NULL);
UPDATE auth_schema_version SET version = 7;
`
	// ReferenceSchemaV7 is the schema an 18.1.21 install writes.
	ReferenceSchemaV7 = ReferenceSchemaV4 + ReferenceTablesV5 + ReferenceTablesV6 + ReferenceTablesV7
	// ReferenceTablesV8 is the version 8 step (18.3): no table changes; its
	// migration renames provider "singularityapi" rows to
	// "singularityapi-dev" or "singularityapi-tech".
	ReferenceTablesV8 = `
UPDATE auth_schema_version SET version = 8;
`
	// ReferenceSchemaV8 is the schema an 18.3 install writes.
	ReferenceSchemaV8 = ReferenceSchemaV7 + ReferenceTablesV8
)

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
