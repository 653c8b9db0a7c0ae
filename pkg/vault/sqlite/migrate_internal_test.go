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
