package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

func openRaw(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(filepath.Join(t.TempDir(), "m.db"), false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func userVersion(t *testing.T, db *sql.DB) int {
	t.Helper()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMigrateAppliesEachStepOnce(t *testing.T) {
	ctx := context.Background()
	db := openRaw(t)
	if err := migrate(ctx, db, migrations); err != nil {
		t.Fatal(err)
	}
	if v := userVersion(t, db); v != schemaVersion(migrations) {
		t.Fatalf("user_version %d, want %d", v, schemaVersion(migrations))
	}
	// Re-running is a no-op (a CREATE TABLE would fail if it ran again).
	if err := migrate(ctx, db, migrations); err != nil {
		t.Fatal(err)
	}
	// A later migration runs against data of the earlier ones.
	if _, err := db.Exec("INSERT INTO usage_history (recorded_at, provider, account_key, limit_id, label) VALUES (1,'p','k','l','x')"); err != nil {
		t.Fatal(err)
	}
	next := append(append([]string{}, migrations...), "ALTER TABLE usage_history ADD COLUMN app TEXT NOT NULL DEFAULT 'omp'")
	if err := migrate(ctx, db, next); err != nil {
		t.Fatal(err)
	}
	var app string
	if err := db.QueryRow("SELECT app FROM usage_history").Scan(&app); err != nil || app != "omp" {
		t.Fatalf("migrated row: %q %v", app, err)
	}
	// The older program refuses the newer schema.
	if err := migrate(ctx, db, migrations); err == nil || !strings.Contains(err.Error(), "newer than this program supports") {
		t.Fatalf("older schema list on newer vault: %v", err)
	}
}

func TestMigrateFailureKeepsPreviousVersion(t *testing.T) {
	ctx := context.Background()
	db := openRaw(t)
	bad := append(append([]string{}, migrations...), "CREATE TABLE extra (x); THIS IS NOT SQL")
	if err := migrate(ctx, db, bad); err == nil {
		t.Fatal("broken migration succeeded")
	}
	if v := userVersion(t, db); v != schemaVersion(migrations) {
		t.Fatalf("user_version %d after failed step, want %d", v, schemaVersion(migrations))
	}
	var n int
	db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'extra'").Scan(&n)
	if n != 0 {
		t.Fatal("failed migration left a partial table")
	}
}

// Migration 4 on a vault with observed usage: the rows stay, unnamed
// (credential_id 0), and the new per-install index serves the reads.
func TestMigration4KeepsClientUsage(t *testing.T) {
	ctx := context.Background()
	db := openRaw(t)
	if err := migrate(ctx, db, migrations[:4]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO client_usage(recorded_at, install_id, app, provider, model, requests, input_tokens)
		VALUES (5, 'i', 'omp', 'anthropic', 'm', 2, 30)`); err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, db, migrations); err != nil {
		t.Fatal(err)
	}
	var cred, in int64
	if err := db.QueryRow("SELECT credential_id, input_tokens FROM client_usage").Scan(&cred, &in); err != nil || cred != 0 || in != 30 {
		t.Fatalf("migrated row: credential %d, input %d, %v", cred, in, err)
	}
	var plan string
	rows, err := db.Query("EXPLAIN QUERY PLAN "+sqlUsageWindow, "i", "omp", 0)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan += detail + "; "
	}
	rows.Close()
	if !strings.Contains(plan, "idx_client_usage_install") {
		t.Fatalf("merge-window read does not use the per-install index: %s", plan)
	}
}
