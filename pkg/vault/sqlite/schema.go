package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// migrations are applied in order; PRAGMA user_version records how many
// have run. Never edit a released migration: append a new one.
//
// The logical model is the reference one: AUTOINCREMENT ids
// that are never reused, soft deletes through disabled_cause, identity keys.
// Physically, the secret fields are sealed blobs (pkg/vault/seal) with
// additional data "auth_credentials/<id>/<column>", the non-secret fields
// are plain columns, and timestamps are epoch milliseconds.
var migrations = []string{
	1: `
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value ANY NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE auth_credentials (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  provider        TEXT NOT NULL,
  credential_type TEXT NOT NULL,              -- 'oauth' | 'api_key'
  disabled_cause  TEXT DEFAULT NULL,          -- NULL = active
  identity_key    TEXT DEFAULT NULL,
  expires         INTEGER NOT NULL DEFAULT 0, -- access-token expiry, epoch ms
  email           TEXT NOT NULL DEFAULT '',
  account_id      TEXT NOT NULL DEFAULT '',
  project_id      TEXT NOT NULL DEFAULT '',
  enterprise_url  TEXT NOT NULL DEFAULT '',
  access          BLOB NOT NULL DEFAULT x'',  -- sealed
  refresh         BLOB NOT NULL DEFAULT x'',  -- sealed
  api_key         BLOB NOT NULL DEFAULT x'',  -- sealed
  extra           BLOB NOT NULL DEFAULT x'',  -- sealed JSON object, empty = none
  created_at      INTEGER NOT NULL,           -- epoch ms
  updated_at      INTEGER NOT NULL            -- epoch ms
);
CREATE INDEX idx_auth_provider ON auth_credentials(provider);
CREATE INDEX idx_auth_provider_identity ON auth_credentials(provider, identity_key)
  WHERE identity_key IS NOT NULL;

CREATE TABLE cache (
  key        TEXT PRIMARY KEY,
  value      BLOB NOT NULL,     -- sealed, additional data "cache/<key>"
  keep_until INTEGER NOT NULL   -- epoch ms
);
CREATE INDEX idx_cache_keep_until ON cache(keep_until);

CREATE TABLE usage_history (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  recorded_at   INTEGER NOT NULL, -- epoch ms
  provider      TEXT NOT NULL,
  account_key   TEXT NOT NULL,
  email         TEXT,
  account_id    TEXT,
  limit_id      TEXT NOT NULL,
  label         TEXT NOT NULL,
  window_label  TEXT,
  used_fraction REAL,
  status        TEXT,
  resets_at     INTEGER
);
CREATE INDEX idx_usage_history_series ON usage_history(provider, account_key, limit_id, recorded_at);
CREATE INDEX idx_usage_history_recorded ON usage_history(recorded_at);
`,
	// 2: fleet blocks and observed client usage, the
	// reference tables; updated_at of a block is in seconds, as there.
	2: `
CREATE TABLE auth_credential_blocks (
  credential_id    INTEGER NOT NULL,
  provider_key     TEXT NOT NULL,
  block_scope      TEXT NOT NULL,
  blocked_until_ms INTEGER NOT NULL, -- epoch ms
  updated_at       INTEGER NOT NULL, -- epoch s
  PRIMARY KEY (credential_id, provider_key, block_scope)
) STRICT, WITHOUT ROWID;
CREATE INDEX idx_blocks_until ON auth_credential_blocks(blocked_until_ms);

CREATE TABLE clients (
  install_id TEXT PRIMARY KEY,
  hostname   TEXT,
  first_seen INTEGER NOT NULL, -- epoch ms
  last_seen  INTEGER NOT NULL  -- epoch ms
) STRICT;
CREATE INDEX idx_clients_last_seen ON clients(last_seen);

CREATE TABLE client_usage (
  id                 INTEGER PRIMARY KEY AUTOINCREMENT,
  recorded_at        INTEGER NOT NULL, -- epoch ms (the client's clock, bounded)
  install_id         TEXT NOT NULL,
  app                TEXT NOT NULL DEFAULT '',
  provider           TEXT NOT NULL,
  model              TEXT NOT NULL,
  requests           INTEGER NOT NULL DEFAULT 0,
  input_tokens       INTEGER NOT NULL DEFAULT 0,
  output_tokens      INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
  cache_write_tokens INTEGER NOT NULL DEFAULT 0,
  cost_usd           REAL NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX idx_client_usage_series ON client_usage(install_id, app, provider, model, recorded_at);
CREATE INDEX idx_client_usage_recorded ON client_usage(recorded_at);
`,
	// Named client tokens (per-client broker bearers). Only the SHA-256
	// digest of a 256-bit random token is kept, so it needs no sealing: the
	// vault file does not let anyone present the token.
	3: `
CREATE TABLE client_tokens (
  name       TEXT PRIMARY KEY,
  scope      TEXT NOT NULL CHECK (scope IN ('client', 'admin')),
  digest     BLOB NOT NULL UNIQUE CHECK (length(digest) = 32),
  created_at INTEGER NOT NULL -- epoch ms
) STRICT;
`,
	// 4: observed usage names the serving credential (0 = not named), and
	// the per-install index serves both the merge-window read and the
	// per-day row cap (fleet bounds, docs/architecture.md) as range scans.
	4: `
ALTER TABLE client_usage ADD COLUMN credential_id INTEGER NOT NULL DEFAULT 0;
DROP INDEX idx_client_usage_series;
CREATE INDEX idx_client_usage_install ON client_usage(install_id, recorded_at);
`,
}

// schemaVersion is the user_version of a fully migrated vault.
func schemaVersion(migs []string) int { return len(migs) - 1 }

// ErrReferenceDB is returned when Open is pointed at a plain reference agent.db.
var ErrReferenceDB = errors.New("this is a plain (unencrypted) reference agent.db, not a Go vault; import it into a new vault (ReadReference + ImportRecords) instead")

// migrate brings db to the latest version of migs, each migration in its
// own immediate transaction so a failure leaves the previous version intact.
func migrate(ctx context.Context, db *sql.DB, migs []string) error {
	for {
		var v int
		if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		latest := schemaVersion(migs)
		if v > latest {
			return fmt.Errorf("vault schema version %d is newer than this program supports (%d)", v, latest)
		}
		if v == latest {
			return nil
		}
		if v == 0 {
			var n int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name IN ('auth_credentials','auth_schema_version')").Scan(&n); err != nil {
				return fmt.Errorf("inspect database: %w", err)
			}
			if n > 0 {
				return ErrReferenceDB
			}
		}
		if err := applyMigration(ctx, db, v, migs[v+1]); err != nil {
			return err
		}
	}
}

func applyMigration(ctx context.Context, db *sql.DB, from int, stmt string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate to version %d: %w", from+1, err)
	}
	defer tx.Rollback()
	// Re-check under the write lock: another process may have migrated meanwhile.
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("migrate to version %d: %w", from+1, err)
	}
	if v != from {
		return nil
	}
	if _, err := tx.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("migrate to version %d: %w", from+1, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", from+1)); err != nil {
		return fmt.Errorf("migrate to version %d: %w", from+1, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate to version %d: %w", from+1, err)
	}
	return nil
}
